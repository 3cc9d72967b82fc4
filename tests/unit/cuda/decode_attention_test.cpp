// Paged decode attention on the GPU (decode_attention.h, run from a decode_plan.h plan) against
// the CPU kernel over head_dim 64/128, GQA groups 1..72 (head tiles and passes), lengths
// crossing block, tile and split edges, scattered pages, padding rows, batch 1 at 20k and batch
// 64; a plan packed for a larger capacity (graph mode) gives identical bits, and a captured
// graph replays new plans. Shape checks run without a device.
#include "llmserve/kernels/cuda/decode_attention.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "llmserve/kernels/attention.h"
#include "llmserve/kernels/cuda/decode_plan.h"
#include "tests/unit/cuda/cuda_test_util.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;
using cuda_test::DeviceBuffer;
using cuda_test::near_all;
using cuda_test::near_rows;

constexpr uint16_t kNanBits = 0x7fc0;  // out is pre-filled with NaN: unwritten rows fail
// bf16 output (2^-9 relative) plus bf16 rounding of q and of the probabilities fed to the
// mma: a numpy model of those roundings peaks at 3.5e-3 absolute for two-key rows (weights
// 2^-9 off); an indexing bug shows as errors of 0.1 and more.
constexpr float kAtol = 5e-3f, kRtol = 1.5e-2f;

struct Shape {
  int head_dim, group, num_kv_heads = 2, block_size = 16;
  int window = 0;  // sliding window (0: none), the CPU twin's too
  int num_heads() const { return group * num_kv_heads; }
};

// A batch over a scattered paged cache: bf16-exact K/V, q rows inside wider (fused QKV) rows,
// and the CPU kernel's output for it.
struct Batch {
  Shape s;
  std::vector<int32_t> lens;
  int64_t max_blocks = 0, num_blocks = 0, q_stride = 0, out_stride = 0;
  std::vector<int32_t> bt;
  std::vector<float> k, v, q;
  std::vector<float> want;  // [B, num_heads * head_dim]
};

kernels::ThreadPool& cpu_pool() {
  static kernels::ThreadPool pool(8);
  return pool;
}

void cpu_reference(Batch& b) {
  const int H = b.s.num_heads(), D = b.s.head_dim;
  const int64_t row = int64_t{H} * D;
  std::vector<int> rows;
  for (size_t i = 0; i < b.lens.size(); ++i) {
    if (b.lens[i] > 0) rows.push_back(static_cast<int>(i));
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  std::vector<float> q(static_cast<size_t>(n * row)), out(q.size());
  std::vector<int32_t> seq(static_cast<size_t>(n)), bt(static_cast<size_t>(n * b.max_blocks));
  for (int64_t j = 0; j < n; ++j) {
    const int r = rows[static_cast<size_t>(j)];
    std::copy_n(b.q.begin() + r * b.q_stride, row, q.begin() + j * row);
    std::copy_n(b.bt.begin() + r * b.max_blocks, b.max_blocks, bt.begin() + j * b.max_blocks);
    seq[static_cast<size_t>(j)] = b.lens[static_cast<size_t>(r)];
  }
  b.want.assign(b.lens.size() * static_cast<size_t>(row), 0.0f);
  if (n == 0) return;
  const kernels::PagedKv kv{{b.num_blocks, b.s.num_kv_heads, b.s.block_size, D},
                            b.k.data(),
                            b.v.data(),
                            bt.data(),
                            b.max_blocks,
                            nullptr,
                            nullptr,
                            b.s.window};
  kernels::decode_attention(cpu_pool(), kv, q.data(), seq.data(), n, H,
                            1.0f / std::sqrt(static_cast<float>(D)), out.data());
  for (int64_t j = 0; j < n; ++j) {
    std::copy_n(out.begin() + j * row, row, b.want.begin() + rows[static_cast<size_t>(j)] * row);
  }
}

// num_blocks / max_blocks: at least these (a graph's buffers fit every batch it replays).
Batch make_batch(const Shape& s, std::vector<int32_t> lens, uint32_t seed, int64_t num_blocks = 0,
                 int64_t max_blocks = 0) {
  Batch b;
  b.s = s;
  b.lens = std::move(lens);
  const int B = static_cast<int>(b.lens.size()), H = s.num_heads(), D = s.head_dim;
  int64_t total = 0;
  for (int32_t l : b.lens) {
    const int64_t nb = (l + s.block_size - 1) / s.block_size;
    b.max_blocks = std::max(b.max_blocks, nb);
    total += nb;
  }
  b.max_blocks = std::max<int64_t>({b.max_blocks, max_blocks, 1});
  b.num_blocks = std::max(total + 3, num_blocks);
  std::vector<int32_t> perm(static_cast<size_t>(b.num_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
  // Entries past a request's pages point far outside the cache: reading one faults.
  b.bt.assign(static_cast<size_t>(B * b.max_blocks), 1 << 28);
  size_t next = 0;
  for (int r = 0; r < B; ++r) {
    const int64_t nb = (b.lens[r] + s.block_size - 1) / s.block_size;
    for (int64_t j = 0; j < nb; ++j) b.bt[static_cast<size_t>(r * b.max_blocks + j)] = perm[next++];
  }
  const size_t cache = static_cast<size_t>(b.num_blocks) * s.num_kv_heads * s.block_size * D;
  b.k = cuda_test::round_bf16(cuda_test::random_floats(cache, seed + 1));
  b.v = cuda_test::round_bf16(cuda_test::random_floats(cache, seed + 2));
  b.q_stride = int64_t{H + 2 * s.num_kv_heads} * D;
  b.out_stride = 2 * int64_t{H} * D;
  b.q = cuda_test::random_floats(static_cast<size_t>(B * b.q_stride), seed + 3, -2.0f, 2.0f);
  cpu_reference(b);
  return b;
}

kc::DecodePlanConfig device_config(const Shape& s, int min_split) {
  kc::DecodePlanConfig cfg;
  cfg.block_size = s.block_size;
  cfg.num_kv_heads = s.num_kv_heads;
  cfg.min_split = min_split;
  int device = 0;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&cfg.num_sms, cudaDevAttrMultiProcessorCount, device),
            cudaSuccess);
  EXPECT_EQ(
      kc::decode_attention_ctas_per_sm(s.head_dim, s.num_heads(), s.num_kv_heads, &cfg.ctas_per_sm),
      cudaSuccess);
  EXPECT_GE(cfg.ctas_per_sm, 1) << "the decode kernel does not fit an SM";
  cfg.ctas_per_sm = std::max(cfg.ctas_per_sm, 1);
  return cfg;
}

std::vector<int32_t> pack(const Batch& b, const kc::DecodePlanConfig& cfg, int capacity,
                          int max_requests, kc::DecodePlan* plan_out = nullptr) {
  kc::DecodePlan p;
  EXPECT_TRUE(kc::plan_decode(b.lens.data(), static_cast<int>(b.lens.size()), cfg, capacity, p));
  std::vector<int32_t> packed(static_cast<size_t>(kc::decode_plan_ints(capacity, max_requests)));
  EXPECT_TRUE(kc::pack_decode_plan(p, capacity, max_requests, packed.data()));
  if (plan_out != nullptr) *plan_out = p;
  return packed;
}

struct DeviceBatch {
  DeviceBuffer<uint16_t> k, v;
  DeviceBuffer<int32_t> bt, seq;
  DeviceBuffer<float> q;
  DeviceBuffer<uint16_t> out;
  explicit DeviceBatch(const Batch& b)
      : k(cuda_test::to_bf16(b.k)),
        v(cuda_test::to_bf16(b.v)),
        bt(b.bt),
        seq(b.lens),
        q(b.q),
        out(std::vector<uint16_t>(b.lens.size() * static_cast<size_t>(b.out_stride), kNanBits)) {}
};

kc::DecodeAttentionParams params(const Batch& b, const DeviceBatch& d, const int32_t* plan,
                                 int capacity, float* workspace) {
  kc::DecodeAttentionParams p;
  p.kv = {d.k.get(),        d.v.get(),      d.bt.get(),  b.max_blocks,
          b.s.num_kv_heads, b.s.block_size, b.s.head_dim};
  p.q = d.q.get();
  p.q_row_stride = b.q_stride;
  p.out = d.out.get();
  p.out_row_stride = b.out_stride;
  p.plan = plan;
  p.plan_capacity = capacity;
  p.workspace = workspace;
  p.num_requests = static_cast<int>(b.lens.size());
  p.num_heads = b.s.num_heads();
  p.scale = 1.0f / std::sqrt(static_cast<float>(b.s.head_dim));
  p.sliding_window = b.s.window;
  p.seq_lens = d.seq.get();
  return p;
}

std::vector<float> out_rows(const Batch& b, const DeviceBatch& d) {
  return cuda_test::bf16_rows_to_f32(d.out.download(), static_cast<int64_t>(b.lens.size()),
                                     int64_t{b.s.num_heads()} * b.s.head_dim, b.out_stride);
}

// One eager run with this capacity and packed row count.
std::vector<float> run_gpu(const Batch& b, const kc::DecodePlanConfig& cfg, int capacity,
                           int max_requests, kc::DecodePlan* plan_out = nullptr) {
  DeviceBatch d(b);
  DeviceBuffer<int32_t> plan(pack(b, cfg, capacity, max_requests, plan_out));
  DeviceBuffer<float> ws(
      static_cast<size_t>(kc::decode_workspace_floats(capacity, b.s.num_heads(), b.s.head_dim)));
  EXPECT_EQ(kc::decode_attention(params(b, d, plan.get(), capacity, ws.get()), nullptr),
            cudaSuccess);
  return out_rows(b, d);
}

std::vector<float> run_gpu(const Batch& b, const kc::DecodePlanConfig& cfg,
                           kc::DecodePlan* plan_out = nullptr) {
  const int B = static_cast<int>(b.lens.size());
  return run_gpu(b, cfg, kc::decode_plan_capacity(B, cfg), B, plan_out);
}

// Elementwise and per head row (bf16 P and output rounding give about 2e-3 per row).
constexpr double kRowRelL2 = 1e-2;

::testing::AssertionResult matches(const std::string& what, const std::vector<float>& got,
                                   const Batch& b) {
  ::testing::AssertionResult r = near_all(what, got, b.want, kAtol, kRtol);
  if (!r) return r;
  return near_rows(what, got, b.want, b.s.head_dim, kRowRelL2);
}

std::string name(const Batch& b, const char* what) {
  std::string s = std::string(what) + " head_dim " + std::to_string(b.s.head_dim) + " group " +
                  std::to_string(b.s.group) + " kv_heads " + std::to_string(b.s.num_kv_heads) +
                  " block " + std::to_string(b.s.block_size) + " lens";
  for (size_t i = 0; i < b.lens.size() && i < 24; ++i) s += " " + std::to_string(b.lens[i]);
  if (b.lens.size() > 24) s += " ... (" + std::to_string(b.lens.size()) + " rows)";
  return s;
}

TEST(CudaDecodeAttention, MatchesCpuOverShapeGrid) {
  LLMSERVE_REQUIRE_CUDA();
  // Tile edges are 32 keys (head_dim 128) and 64 (head_dim 64); 0 is a padding row.
  const std::vector<int32_t> lens = {1,   2,   15,  16,  17,  31,  32,  33, 63,   64,  65,
                                     127, 128, 129, 255, 256, 257, 600, 0,  1000, 4100};
  for (int D : {64, 128}) {
    for (int G : {1, 3, 4, 5, 8, 16}) {
      const Batch b = make_batch({D, G}, lens, 100 + D + G);
      for (int min_split : {16, 128}) {
        kc::DecodePlan plan;
        const auto got = run_gpu(b, device_config(b.s, min_split), &plan);
        EXPECT_GT(plan.num_partials, 0);
        EXPECT_TRUE(matches(name(b, "decode_attention") + " min_split " + std::to_string(min_split),
                            got, b));
      }
    }
  }
}

// Sliding windows: items wholly below the window (a plan over every key), a plan over the
// window only (items from the block holding its first key), windows starting mid-tile and
// mid-page (odd starts too), splits of one request on both sides of the edge.
TEST(CudaDecodeAttention, MatchesCpuWithSlidingWindows) {
  LLMSERVE_REQUIRE_CUDA();
  const std::vector<int32_t> lens = {1, 2, 17, 33, 64, 65, 129, 257, 600, 0, 1000, 4100};
  for (int D : {64, 128}) {
    for (int W : {1, 7, 31, 100, 512}) {
      const Batch b = make_batch({D, 4, 2, 16, W}, lens, 700 + D + W);
      for (int min_split : {16, 128}) {
        for (bool planned : {false, true}) {
          kc::DecodePlanConfig cfg = device_config(b.s, min_split);
          if (planned) cfg.sliding_window = W;
          EXPECT_TRUE(matches(name(b, "decode_attention") + " window " + std::to_string(W) +
                                  " min_split " + std::to_string(min_split) +
                                  (planned ? " planned over the window" : " planned over all"),
                              run_gpu(b, cfg), b));
        }
      }
    }
  }
}

TEST(CudaDecodeAttention, LargeGroupsUseSeveralHeadTilesAndPasses) {
  LLMSERVE_REQUIRE_CUDA();
  for (int G : {24, 32, 40, 64, 72}) {
    const Batch b = make_batch({128, G, 1}, {1, 33, 0, 300, 1500}, 300 + G);
    EXPECT_TRUE(matches(name(b, "decode_attention"), run_gpu(b, device_config(b.s, 128)), b));
  }
  const Batch b = make_batch({64, 12, 3}, {5, 77, 700}, 399);
  EXPECT_TRUE(matches(name(b, "decode_attention"), run_gpu(b, device_config(b.s, 16)), b));
}

TEST(CudaDecodeAttention, OtherBlockSizes) {
  LLMSERVE_REQUIRE_CUDA();
  for (int bs : {32, 48, 256}) {
    const Batch b = make_batch({128, 4, 2, bs}, {1, bs - 1, bs, bs + 1, 3 * bs + 5, 2000}, bs);
    EXPECT_TRUE(matches(name(b, "decode_attention"), run_gpu(b, device_config(b.s, 1)), b));
  }
}

TEST(CudaDecodeAttention, BatchOneLongContextAndBatch64) {
  LLMSERVE_REQUIRE_CUDA();
  const Shape llama{128, 4, 8, 16};  // Llama-3.1-8B: 32 heads, 8 kv heads
  {
    const Batch b = make_batch(llama, {20000}, 501);
    kc::DecodePlan plan;
    const auto got = run_gpu(b, device_config(b.s, 128), &plan);
    EXPECT_GT(plan.items.size(), 8u);
    EXPECT_TRUE(matches(name(b, "decode_attention"), got, b));
  }
  std::mt19937 rng(9);
  std::vector<int32_t> lens(64);
  for (auto& l : lens) l = static_cast<int32_t>(rng() % 3000) + 1;
  lens[5] = lens[40] = 0;
  lens[7] = 1;
  const Batch b = make_batch(llama, lens, 502);
  EXPECT_TRUE(matches(name(b, "decode_attention"), run_gpu(b, device_config(b.s, 128)), b));
  // One split per request (capacity = the non-empty rows) takes the direct-write path for all.
  const int active =
      static_cast<int>(std::count_if(lens.begin(), lens.end(), [](int32_t l) { return l > 0; }));
  kc::DecodePlan plan;
  const auto one = run_gpu(b, device_config(b.s, 128), active, 64, &plan);
  EXPECT_EQ(plan.num_partials, 0);
  EXPECT_TRUE(matches(name(b, "decode_attention one split each"), one, b));
}

TEST(CudaDecodeAttention, LargerCapacityGivesIdenticalBits) {
  LLMSERVE_REQUIRE_CUDA();
  const Batch b = make_batch({128, 4, 2}, {3000, 0, 17, 700, 129, 1}, 601);
  const auto cfg = device_config(b.s, 16);
  const int B = static_cast<int>(b.lens.size());
  const auto exact = run_gpu(b, cfg, kc::decode_plan_capacity(B, cfg), B);
  const auto graph = run_gpu(b, cfg, kc::decode_plan_capacity(B + 40, cfg) + 17, B + 40);
  EXPECT_TRUE(matches(name(b, "decode_attention"), exact, b));
  ASSERT_EQ(exact.size(), graph.size());
  size_t diff = 0;
  for (size_t i = 0; i < exact.size(); ++i) diff += exact[i] != graph[i];
  EXPECT_EQ(diff, 0u) << "a plan packed for a larger capacity changed " << diff << " outputs";
}

TEST(CudaDecodeAttention, CapturedGraphReplaysNewPlans) {
  LLMSERVE_REQUIRE_CUDA();
  const Shape s{128, 4, 2};
  const std::vector<std::vector<int32_t>> batches = {{2500, 0, 40, 1, 0, 333},
                                                     {1, 17, 4000, 0, 256, 64}};
  const int B = 6, max_blocks = 4000 / 16 + 1, num_blocks = 8000 / 16;
  const auto cfg = device_config(s, 64);
  const int capacity = kc::decode_plan_capacity(B, cfg);
  // Buffers sized for every batch; the graph is captured once over them.
  Batch first = make_batch(s, batches[0], 701, num_blocks, max_blocks);
  DeviceBatch d(first);
  DeviceBuffer<int32_t> plan(static_cast<size_t>(kc::decode_plan_ints(capacity, B)));
  DeviceBuffer<float> ws(
      static_cast<size_t>(kc::decode_workspace_floats(capacity, s.num_heads(), s.head_dim)));
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const cudaError_t launch =
      kc::decode_attention(params(first, d, plan.get(), capacity, ws.get()), stream);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(launch, cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (size_t i = 0; i < batches.size(); ++i) {
    const Batch b =
        make_batch(s, batches[i], static_cast<uint32_t>(701 + 100 * i), num_blocks, max_blocks);
    ASSERT_EQ(b.num_blocks, first.num_blocks);
    ASSERT_EQ(b.max_blocks, first.max_blocks);
    d.k.upload(cuda_test::to_bf16(b.k));
    d.v.upload(cuda_test::to_bf16(b.v));
    d.bt.upload(b.bt);
    d.q.upload(b.q);
    d.out.upload(std::vector<uint16_t>(static_cast<size_t>(B * b.out_stride), kNanBits));
    plan.upload(pack(b, cfg, capacity, B));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the copies ran on the legacy stream
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_TRUE(matches(name(b, "decode_attention graph replay"), out_rows(b, d), b));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// Host-side checks before any launch: run with or without a device.
TEST(CudaDecodeAttention, RejectsBadShapesAndAlignment) {
  auto* fake_f = reinterpret_cast<float*>(uintptr_t{4096});
  auto* fake_u16 = reinterpret_cast<uint16_t*>(uintptr_t{4096});
  auto* fake_i32 = reinterpret_cast<int32_t*>(uintptr_t{4096});
  kc::DecodeAttentionParams ok;
  ok.kv = {fake_u16, fake_u16, fake_i32, 8, 2, 16, 128};
  ok.q = fake_f;
  ok.q_row_stride = 1024;
  ok.out = fake_u16;
  ok.out_row_stride = 2048;
  ok.plan = fake_i32;
  ok.plan_capacity = 10;
  ok.workspace = fake_f;
  ok.num_requests = 4;
  ok.num_heads = 8;
  ok.scale = 0.088f;
  auto bad = [&](auto change) {
    kc::DecodeAttentionParams p = ok;
    change(p);
    return kc::decode_attention(p, nullptr);
  };
  EXPECT_EQ(bad([&](auto& p) { p.kv.head_dim = 96; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.num_heads = 7; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.kv.num_kv_heads = 0; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.kv.block_size = 0; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.plan_capacity = 0; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.plan = nullptr; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.q = fake_f + 1; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.q_row_stride = 1026; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.out = fake_u16 + 4; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.out_row_stride = 2044; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.workspace = fake_f + 2; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.num_requests = 70000; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.num_requests = 0; }), cudaSuccess);  // nothing to do
  int n = 0;
  EXPECT_EQ(kc::decode_attention_ctas_per_sm(96, 8, 2, &n), cudaErrorInvalidValue);
  EXPECT_EQ(kc::decode_attention_ctas_per_sm(128, 7, 2, &n), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace llmserve
