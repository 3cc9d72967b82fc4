// CUDA prefill attention (prefill_attention.h) against its CPU twin, kernels::prefill_attention in
// f32, over head_dim 64/128, GQA groups 1/3/4/8/16, varlen batches of fresh prompts and chunks
// after cached pages, scattered pages, block sizes 16/32/48/64, a q row stride wider than the
// heads (fused QKV) and out in the f32 row pitch. Unused cache slots, spare pages and the QKV
// padding hold NaN, and out starts as a NaN sentinel, so reading or writing outside its range
// shows. Host-side checks (parameter validation, shared memory) run without a device.
#include "llmserve/kernels/cuda/prefill_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "llmserve/kernels/attention.h"
#include "tests/unit/cuda/cuda_test_util.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;
using cuda_test::DeviceBuffer;
using cuda_test::near_all;
using cuda_test::near_rows;

constexpr uint16_t kSentinel = 0x7fc1;  // a bf16 NaN the kernel never produces
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Tolerance. The reference gets the same bf16 K/V and the bf16-rounded Q the kernel uses, and
// computes in f32. The kernel then differs by (a) P rounded to bf16 (unit roundoff u = 2^-8)
// before PV while the row sum l uses the f32 P: |dO| <= u sum_j p_j |v_j| / l <= u max|v| = u,
// with V in [-1, 1]; (b) the bf16 output: <= u |O|; (c) f32 summation order and ex2.approx:
// ~1e-6 relative, covered by the slack.
constexpr float kAtol = 1.0f / 256 + 1e-5f;
constexpr float kRtol = 1.0f / 256 + 1e-5f;
// Per head row: bf16 P and output rounding (2^-9 each) give about 2e-3.
constexpr double kRowRelL2 = 1e-2;

struct Req {
  int q_len;   // new tokens this step
  int cached;  // tokens already in the cache before them
};

struct Case {
  std::string name;
  int head_dim = 128, group = 4, num_kv_heads = 2, block_size = 16;
  std::vector<Req> reqs;
  float q_amp = 5.0f;         // q ~ U[-q_amp, q_amp]: logit spread of about q_amp / 3
  bool fused_q = true;        // q rows inside [T, (H + 2 KV) D] with NaN in the K/V columns
  bool f32_pitch_out = true;  // out rows 2 H D apart, as CudaOps passes them
  int extra_max_q_len = 0;    // grid larger than the longest request
  int window = 0;             // sliding window (0: none), the CPU twin's too
  // Table entries of pages wholly below every query's window point at an all-NaN page, as
  // KvCacheManager::free_outside_window leaves them (the null block): never to be read.
  bool release_behind_window = false;
  int num_heads() const { return num_kv_heads * group; }
};

// A case's host data: a scattered paged cache (f32 copies of bf16 values; NaN where unused).
struct Batch {
  int B = 0, H = 0, D = 0, T = 0, max_q = 0, bt_width = 0, num_blocks = 0;
  std::vector<int32_t> qs, seq, bt;
  std::vector<float> k, v;  // [num_blocks, KV, block_size, D]
  std::vector<float> q;     // [T, H, D], bf16-rounded
  int64_t q_stride = 0, out_stride = 0;
  std::vector<float> q_dev;  // [T, q_stride]
};

Batch make_batch(const Case& c, uint32_t seed) {
  Batch b;
  b.B = static_cast<int>(c.reqs.size());
  b.H = c.num_heads();
  b.D = c.head_dim;
  const int KV = c.num_kv_heads, bs = c.block_size, D = b.D;
  b.qs = {0};
  int used = 0, width = 1;
  for (const Req& r : c.reqs) {
    b.T += r.q_len;
    b.qs.push_back(b.T);
    b.seq.push_back(r.cached + r.q_len);
    b.max_q = std::max(b.max_q, r.q_len);
    const int pages = (r.cached + r.q_len + bs - 1) / bs;
    used += pages;
    width = std::max(width, pages);
  }
  b.bt_width = width + 2;
  const int spare = 3;
  b.num_blocks = used + spare;
  std::vector<int32_t> perm(b.num_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
  // Unused table entries point at spare (all-NaN) pages.
  b.bt.assign(static_cast<size_t>(b.B) * b.bt_width, perm[used]);
  const size_t cache = static_cast<size_t>(b.num_blocks) * KV * bs * D;
  b.k.assign(cache, kNaN);
  b.v.assign(cache, kNaN);
  std::vector<std::pair<int, int>> released;  // (request, page) entries to point at NaN
  std::mt19937 rng(seed + 1);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const auto bf = [](float x) { return kernels::bf16_to_fp32(kernels::fp32_to_bf16(x)); };
  int next = 0;
  for (int r = 0; r < b.B; ++r) {
    int32_t* row = b.bt.data() + static_cast<size_t>(r) * b.bt_width;
    const int len = b.seq[r];
    for (int j = 0; j < (len + bs - 1) / bs; ++j) {
      row[j] = perm[next++];
      const int first_query = c.reqs[static_cast<size_t>(r)].cached;
      if (c.release_behind_window && (j + 1) * bs <= first_query - c.window + 1) {
        released.emplace_back(r, j);
      }
    }
    for (int pos = 0; pos < len; ++pos) {
      for (int h = 0; h < KV; ++h) {
        const size_t at = ((static_cast<size_t>(row[pos / bs]) * KV + h) * bs + pos % bs) * D;
        for (int d = 0; d < D; ++d) {
          b.k[at + d] = bf(unit(rng));
          b.v[at + d] = bf(unit(rng));
        }
      }
    }
  }
  for (const auto& [r, j] : released) b.bt[static_cast<size_t>(r) * b.bt_width + j] = perm[used];
  const int64_t HD = static_cast<int64_t>(b.H) * D;
  b.q_stride = c.fused_q ? static_cast<int64_t>(b.H + 2 * KV) * D : HD;
  b.out_stride = c.f32_pitch_out ? 2 * HD : HD;
  std::uniform_real_distribution<float> qd(-c.q_amp, c.q_amp);
  b.q.resize(static_cast<size_t>(b.T) * HD);
  b.q_dev.assign(static_cast<size_t>(b.T) * b.q_stride, kNaN);
  for (int t = 0; t < b.T; ++t) {
    for (int64_t i = 0; i < HD; ++i) {
      const float x = qd(rng);
      b.q[t * HD + i] = bf(x);
      b.q_dev[t * b.q_stride + i] = x;  // the kernel rounds Q to bf16 itself
    }
  }
  return b;
}

std::vector<float> cpu_reference(const Case& c, const Batch& b) {
  kernels::ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  const kernels::PagedKv kv{{b.num_blocks, c.num_kv_heads, c.block_size, b.D},
                            b.k.data(),
                            b.v.data(),
                            b.bt.data(),
                            b.bt_width,
                            nullptr,
                            nullptr,
                            c.window};
  std::vector<float> out(b.q.size(), 0.0f);
  kernels::prefill_attention(pool, kv, b.q.data(), b.qs.data(), b.seq.data(), b.B, b.H,
                             1.0f / std::sqrt(static_cast<float>(b.D)), out.data());
  return out;
}

// The device copies of a batch and the params of one launch over all of it.
struct DeviceBatch {
  DeviceBuffer<uint16_t> k, v;
  DeviceBuffer<int32_t> bt, qs, seq;
  DeviceBuffer<float> q;
  DeviceBuffer<uint16_t> out;
  kc::PrefillAttentionParams params;

  DeviceBatch(const Case& c, const Batch& b)
      : k(cuda_test::to_bf16(b.k)),
        v(cuda_test::to_bf16(b.v)),
        bt(b.bt),
        qs(b.qs),
        seq(b.seq),
        q(b.q_dev),
        out(std::vector<uint16_t>(static_cast<size_t>(b.T) * b.out_stride, kSentinel)) {
    params.kv = {k.get(), v.get(), bt.get(), b.bt_width, c.num_kv_heads, c.block_size, b.D};
    params.q = q.get();
    params.q_row_stride = b.q_stride;
    params.query_start = qs.get();
    params.seq_lens = seq.get();
    params.num_seqs = b.B;
    params.max_q_len = b.max_q + c.extra_max_q_len;
    params.num_heads = b.H;
    params.scale = 1.0f / std::sqrt(static_cast<float>(b.D));
    params.out = out.get();
    params.out_row_stride = b.out_stride;
    params.sliding_window = c.window;
  }
};

// The [T, H, D] part of out as f32, and whether every element past it is still the sentinel.
std::vector<float> unpack_out(const Batch& b, const std::vector<uint16_t>& raw, bool* pad_intact) {
  const int64_t HD = static_cast<int64_t>(b.H) * b.D;
  std::vector<float> got(static_cast<size_t>(b.T) * HD);
  *pad_intact = true;
  for (int t = 0; t < b.T; ++t) {
    for (int64_t i = 0; i < b.out_stride; ++i) {
      const uint16_t x = raw[t * b.out_stride + i];
      if (i < HD) {
        got[t * HD + i] = kernels::bf16_to_fp32(x);
      } else if (x != kSentinel) {
        *pad_intact = false;
      }
    }
  }
  return got;
}

std::string describe(const Case& c) {
  std::string s = c.name + ": head_dim " + std::to_string(c.head_dim) + " group " +
                  std::to_string(c.group) + " kv_heads " + std::to_string(c.num_kv_heads) +
                  " block " + std::to_string(c.block_size) + " reqs (q_len/cached)";
  for (const Req& r : c.reqs) s += " " + std::to_string(r.q_len) + "/" + std::to_string(r.cached);
  return s;
}

void expect_matches_cpu(const Case& c, uint32_t seed) {
  const Batch b = make_batch(c, seed);
  const std::vector<float> want = cpu_reference(c, b);
  DeviceBatch d(c, b);
  ASSERT_EQ(kc::prefill_attention(d.params, nullptr), cudaSuccess) << describe(c);
  bool pad_intact = false;
  const std::vector<float> got = unpack_out(b, d.out.download(), &pad_intact);
  EXPECT_TRUE(near_all("prefill_attention " + describe(c), got, want, kAtol, kRtol));
  EXPECT_TRUE(near_rows("prefill_attention " + describe(c), got, want, c.head_dim, kRowRelL2));
  EXPECT_TRUE(pad_intact) << "prefill_attention wrote past num_heads * head_dim: " << describe(c);
}

// Fresh prompts of 1..1000 tokens around the 16-row, 64-key and 128-row edges, an empty
// request, and chunks after cached tokens that end mid-page.
const std::vector<Req> kMixedBatch = {{1, 0},   {15, 0},    {16, 0},   {17, 0},   {64, 0},
                                      {65, 0},  {200, 0},   {1000, 0}, {0, 5},    {17, 40},
                                      {1, 300}, {65, 1000}, {200, 77}, {129, 63}, {15, 33}};

TEST(CudaPrefillAttention, MatchesCpuOverHeadDimsAndGqaGroups) {
  LLMSERVE_REQUIRE_CUDA();
  for (int D : {64, 128}) {
    for (int G : {1, 3, 4, 8, 16}) {
      Case c;
      c.name = "grid";
      c.head_dim = D;
      c.group = G;
      c.num_kv_heads = G == 16 ? 1 : 2;
      c.reqs = kMixedBatch;
      expect_matches_cpu(c, 100 + D + G);
    }
  }
}

// Sliding windows shorter than, around and longer than the 64-key tiles and 128-row CTAs, over
// fresh prompts and chunks after cached tokens.
TEST(CudaPrefillAttention, MatchesCpuWithSlidingWindows) {
  LLMSERVE_REQUIRE_CUDA();
  for (int D : {64, 128}) {
    for (int W : {1, 7, 64, 100, 300}) {
      Case c;
      c.name = "window " + std::to_string(W);
      c.head_dim = D;
      c.window = W;
      c.reqs = kMixedBatch;
      expect_matches_cpu(c, 500 + D + W);
    }
  }
}

// Chunks after long cached prefixes whose pages behind the window were released: the kernel must
// not read them (0 x NaN from a masked key's V would reach the output).
TEST(CudaPrefillAttention, ReadsNoPageReleasedBehindTheWindow) {
  LLMSERVE_REQUIRE_CUDA();
  for (int D : {64, 128}) {
    for (int W : {7, 64, 100}) {
      Case c;
      c.name = "window " + std::to_string(W) + " with released pages";
      c.head_dim = D;
      c.window = W;
      c.release_behind_window = true;
      c.reqs = {{65, 1000}, {200, 300}, {17, 400}, {129, 630}, {1, 5025}};
      expect_matches_cpu(c, 700 + D + W);
    }
  }
}

TEST(CudaPrefillAttention, MatchesCpuOverBlockSizes) {
  LLMSERVE_REQUIRE_CUDA();
  for (int bs : {32, 48, 64}) {
    for (int D : {64, 128}) {
      Case c;
      c.name = "block size";
      c.head_dim = D;
      c.block_size = bs;
      c.reqs = {{70, 0}, {33, 95}, {128, 130}, {1, 47}, {300, 17}};
      expect_matches_cpu(c, 200 + bs + D);
    }
  }
}

TEST(CudaPrefillAttention, MatchesCpuFromFlatToPeakedSoftmax) {
  LLMSERVE_REQUIRE_CUDA();
  // Near-uniform weights over hundreds of keys, and one key dominating by e^40 (the running max
  // changes by large steps, rescaling O by factors that underflow).
  for (float amp : {0.25f, 40.0f}) {
    for (int D : {64, 128}) {
      Case c;
      c.name = "q amplitude " + std::to_string(amp);
      c.head_dim = D;
      c.group = 2;
      c.q_amp = amp;
      c.reqs = {{500, 0}, {90, 400}, {7, 7}};
      expect_matches_cpu(c, 300 + D + static_cast<uint32_t>(amp));
    }
  }
}

TEST(CudaPrefillAttention, MatchesCpuWithTightRowsAndALargerGrid) {
  LLMSERVE_REQUIRE_CUDA();
  for (int D : {64, 128}) {
    Case c;
    c.name = "tight rows";
    c.head_dim = D;
    c.fused_q = false;
    c.f32_pitch_out = false;
    c.extra_max_q_len = 300;
    c.reqs = {{129, 0}, {3, 61}, {64, 64}};
    expect_matches_cpu(c, 400 + D);
  }
}

// FlashInfer's check: the batch equals each request launched alone, bit for bit.
TEST(CudaPrefillAttention, BatchEqualsEachRequestAlone) {
  LLMSERVE_REQUIRE_CUDA();
  Case c;
  c.name = "alone";
  c.head_dim = 128;
  c.group = 3;
  c.reqs = {{200, 0}, {17, 40}, {1, 300}, {65, 130}};
  const Batch b = make_batch(c, 500);
  DeviceBatch d(c, b);
  ASSERT_EQ(kc::prefill_attention(d.params, nullptr), cudaSuccess);
  const std::vector<uint16_t> batched = d.out.download();
  DeviceBuffer<uint16_t> alone(batched.size());
  for (int r = 0; r < b.B; ++r) {
    const int q_len = b.qs[r + 1] - b.qs[r];
    DeviceBuffer<int32_t> qs(std::vector<int32_t>{0, q_len});
    kc::PrefillAttentionParams p = d.params;
    p.kv.block_tables = d.bt.get() + static_cast<int64_t>(r) * b.bt_width;
    p.q = d.q.get() + b.qs[r] * b.q_stride;
    p.query_start = qs.get();
    p.seq_lens = d.seq.get() + r;
    p.num_seqs = 1;
    p.max_q_len = q_len;
    p.out = alone.get() + b.qs[r] * b.out_stride;
    ASSERT_EQ(kc::prefill_attention(p, nullptr), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  const std::vector<uint16_t> single = alone.download();
  const int64_t HD = static_cast<int64_t>(b.H) * b.D;
  int64_t diff = 0;
  for (int t = 0; t < b.T; ++t) {
    for (int64_t i = 0; i < HD; ++i)
      diff += batched[t * b.out_stride + i] != single[t * b.out_stride + i];
  }
  EXPECT_EQ(diff, 0) << "elements where the batch differs from the requests alone";
}

TEST(CudaPrefillAttention, CapturedGraphEqualsEagerLaunch) {
  LLMSERVE_REQUIRE_CUDA();
  Case c;
  c.name = "graph";
  c.head_dim = 64;
  c.reqs = {{100, 20}, {5, 0}};
  const Batch b = make_batch(c, 600);
  DeviceBatch d(c, b);
  ASSERT_EQ(kc::prefill_attention(d.params, nullptr), cudaSuccess);
  const std::vector<uint16_t> eager = d.out.download();
  ASSERT_EQ(cudaMemset(d.out.get(), 0, eager.size() * sizeof(uint16_t)), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  const cudaError_t launch = kc::prefill_attention(d.params, s);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_EQ(launch, cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  // The pad columns past num_heads * head_dim hold the sentinel in `eager` and zeros here.
  bool pad_eager = false, pad_graph = false;
  const std::vector<float> graph_out = unpack_out(b, d.out.download(), &pad_graph);
  const std::vector<float> eager_out = unpack_out(b, eager, &pad_eager);
  ASSERT_EQ(graph_out.size(), eager_out.size());
  EXPECT_EQ(std::memcmp(graph_out.data(), eager_out.data(), graph_out.size() * sizeof(float)), 0)
      << "the captured graph wrote other values than the eager launch";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

// Host side: no device needed.

kc::PrefillAttentionParams valid_params() {
  // Never dereferenced: prefill_attention_check only looks at values and alignment.
  alignas(16) static uint16_t cache[16];
  alignas(16) static float q[16];
  alignas(16) static int32_t ints[16];
  alignas(16) static uint16_t out[16];
  kc::PrefillAttentionParams p;
  p.kv = {cache, cache, ints, 4, 8, 16, 128};
  p.q = q;
  p.q_row_stride = (32 + 16) * 128;
  p.query_start = ints;
  p.seq_lens = ints;
  p.num_seqs = 2;
  p.max_q_len = 4096;
  p.num_heads = 32;
  p.scale = 0.088f;
  p.out = out;
  p.out_row_stride = 2 * 32 * 128;
  return p;
}

TEST(CudaPrefillAttentionHost, CheckAcceptsTheShapesCudaOpsPasses) {
  EXPECT_EQ(kc::prefill_attention_check(valid_params()), cudaSuccess);
  kc::PrefillAttentionParams p = valid_params();
  p.kv.head_dim = 64;
  p.num_heads = 9;
  p.kv.num_kv_heads = 3;
  p.q_row_stride = 9 * 64;
  p.out_row_stride = 9 * 64;
  p.kv.block_size = 48;
  EXPECT_EQ(kc::prefill_attention_check(p), cudaSuccess);
  p.num_heads = 48;  // group 16
  p.q_row_stride = p.out_row_stride = 48 * 64;
  EXPECT_EQ(kc::prefill_attention_check(p), cudaSuccess);
}

TEST(CudaPrefillAttentionHost, CheckRejectsEachBrokenPrecondition) {
  using P = kc::PrefillAttentionParams;
  using Edit = void (*)(P&);
  const std::vector<std::pair<const char*, Edit>> edits = {
      {"head_dim 96", [](P& p) { p.kv.head_dim = 96; }},
      {"heads not a multiple of kv heads", [](P& p) { p.num_heads = 30; }},
      {"no kv heads", [](P& p) { p.kv.num_kv_heads = 0; }},
      {"block size 8", [](P& p) { p.kv.block_size = 8; }},
      {"block size 24", [](P& p) { p.kv.block_size = 24; }},
      {"negative table stride", [](P& p) { p.kv.block_table_stride = -1; }},
      {"null k cache", [](P& p) { p.kv.k_cache = nullptr; }},
      {"misaligned v cache",
       [](P& p) { p.kv.v_cache = static_cast<const uint16_t*>(p.kv.v_cache) + 1; }},
      {"null block table", [](P& p) { p.kv.block_tables = nullptr; }},
      {"misaligned q", [](P& p) { p.q += 2; }},
      {"q stride not a multiple of 4", [](P& p) { p.q_row_stride += 2; }},
      {"q stride below the heads", [](P& p) { p.q_row_stride = 32 * 128 - 4; }},
      {"null query_start", [](P& p) { p.query_start = nullptr; }},
      {"null seq_lens", [](P& p) { p.seq_lens = nullptr; }},
      {"negative num_seqs", [](P& p) { p.num_seqs = -1; }},
      {"num_seqs past the grid", [](P& p) { p.num_seqs = 65536; }},
      {"max_q_len past the grid", [](P& p) { p.max_q_len = 65535 * 128 + 1; }},
      {"zero scale", [](P& p) { p.scale = 0.0f; }},
      {"NaN scale", [](P& p) { p.scale = kNaN; }},
      {"null out", [](P& p) { p.out = nullptr; }},
      {"misaligned out", [](P& p) { p.out += 1; }},
      {"odd out stride", [](P& p) { p.out_row_stride += 1; }},
      {"out stride below the heads", [](P& p) { p.out_row_stride = 32 * 128 - 2; }},
  };
  for (const auto& [what, edit] : edits) {
    kc::PrefillAttentionParams p = valid_params();
    edit(p);
    EXPECT_EQ(kc::prefill_attention_check(p), cudaErrorInvalidValue) << what;
    EXPECT_EQ(kc::prefill_attention(p, nullptr), cudaErrorInvalidValue) << what;
  }
}

TEST(CudaPrefillAttentionHost, EmptyBatchLaunchesNothing) {
  kc::PrefillAttentionParams p;  // all null: nothing may be touched
  EXPECT_EQ(kc::prefill_attention(p, nullptr), cudaSuccess);
  p = valid_params();
  p.max_q_len = 0;
  EXPECT_EQ(kc::prefill_attention(p, nullptr), cudaSuccess);
}

TEST(CudaPrefillAttentionHost, SharedMemoryFitsEverySupportedArchitecture) {
  // sm_86 / sm_89 allow 99 KB of opt-in shared memory per block; sm_80 163 KB, sm_90 227 KB.
  constexpr int kSm86Limit = 99 * 1024;
  EXPECT_GT(kc::prefill_attention_smem_bytes(64), 0);
  EXPECT_LE(kc::prefill_attention_smem_bytes(64), kSm86Limit);
  EXPECT_GT(kc::prefill_attention_smem_bytes(128), 0);
  EXPECT_LE(kc::prefill_attention_smem_bytes(128), kSm86Limit);
  // Two CTAs per SM on the H100 / H200 (228 KB per SM, 1 KB reserved per CTA).
  EXPECT_LE(2 * (kc::prefill_attention_smem_bytes(128) + 1024), 228 * 1024);
  EXPECT_EQ(kc::prefill_attention_smem_bytes(96), 0);
}

}  // namespace
}  // namespace llmserve
