// Decode and prefill attention on the GPU over int8 and e4m3 pages (paged_kv.h) against
//  (1) double-precision attention over the dequantized pages: the same tolerances as the bf16
//      kernels' tests (the 8-bit values are exact in bf16 and the scales enter in f32, so the
//      kernel's only roundings are still q, the softmax weights (times the V scales) and out);
//  (2) int8: the CPU's attention over the same int8 pages (kernels/attention.h);
//  (3) double-precision attention over the unquantized f32 K/V: the quantization error, within
//      a stated bound: kInt8Bound / kFp8Bound (a host model of the rule, 40 trials of the data
//      below, peaks at 0.0062 for int8 and 0.056 for e4m3).
// head_dim 64 / 128, GQA groups 1 / 3 / 8, lengths crossing block, tile and split edges,
// scattered pages whose unwritten slots hold NaN scales and e4m3 NaN bytes, a padding row, and
// prefill chunks after cached pages. Shape checks of the 8-bit paths run without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "llmserve/kernels/attention.h"
#include "llmserve/kernels/cuda/decode_attention.h"
#include "llmserve/kernels/cuda/decode_plan.h"
#include "llmserve/kernels/cuda/prefill_attention.h"
#include "tests/unit/cuda/cuda_test_util.h"
#include "tests/unit/cuda/kv_quant_util.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;
using cuda_test::DeviceBuffer;
using cuda_test::near_all;
using kernels::KvDtype;

constexpr float kDecodeAtol = 5e-3f, kDecodeRtol = 1.5e-2f;  // decode_attention_test.cpp's
constexpr float kPrefillTol = 1.0f / 256 + 1e-5f;            // prefill_attention_test.cpp's
constexpr float kInt8Bound = 0.025f, kFp8Bound = 0.12f;      // max |out - f32 attention|
constexpr float kQAmp = 2.0f;                                // q ~ U[-2, 2], K/V ~ U[-1, 1]

const char* name_of(KvDtype d) {
  return kernels::kv_dtype_name(d);
}

using Paged = cuda_test::ScatteredPages;

Paged make_pages(KvDtype dtype, int D, int nkv, const std::vector<int32_t>& lens, uint32_t seed) {
  return cuda_test::scattered_pages(dtype, D, nkv, lens, seed);
}

struct DevicePages {
  DeviceBuffer<uint8_t> k, v;
  DeviceBuffer<uint16_t> ks, vs;
  DeviceBuffer<int32_t> table;
  explicit DevicePages(const Paged& p)
      : k(p.pages.k), v(p.pages.v), ks(p.pages.ks), vs(p.pages.vs), table(p.table) {}
  kc::PagedKvDevice kv(const Paged& p, const int32_t* rows) const {
    kc::PagedKvDevice d;
    d.k_cache = k.get();
    d.v_cache = v.get();
    d.block_tables = rows;
    d.block_table_stride = p.width;
    d.num_kv_heads = p.pages.shape.num_kv_heads;
    d.block_size = p.pages.shape.block_size;
    d.head_dim = p.pages.shape.head_dim;
    d.dtype = p.pages.shape.dtype;
    d.k_scales = ks.get();
    d.v_scales = vs.get();
    return d;
  }
};

kernels::PagedKv cpu_kv(const Paged& p, const int32_t* table, int window = 0) {
  return kernels::PagedKv{p.pages.shape, p.pages.k.data(),  p.pages.v.data(),  table,
                          p.width,       p.pages.ks.data(), p.pages.vs.data(), window};
}

// The first key a query at position pos attends under window W (0: none).
int window_first(int pos, int W) {
  return W > 0 ? std::max(0, pos - W + 1) : 0;
}

kernels::ThreadPool& cpu_pool() {
  static kernels::ThreadPool pool(4);
  return pool;
}

std::string describe(const char* what, KvDtype dtype, int D, int group) {
  return std::string(what) + " " + name_of(dtype) + " head_dim " + std::to_string(D) + " group " +
         std::to_string(group);
}

// --- decode ---

void check_decode(KvDtype dtype, int D, int group, uint32_t seed, int window = 0) {
  const int nkv = 2, H = nkv * group;
  const std::vector<int32_t> lens = {1,  2,   15,  16,  17,  31,  32,  33, 63,  64,
                                     65, 127, 128, 129, 255, 256, 257, 0,  600, 2100};
  const Paged p = make_pages(dtype, D, nkv, lens, seed);
  const int B = static_cast<int>(lens.size());
  const int64_t row = int64_t{H} * D, q_stride = row + 2 * int64_t{nkv} * D, out_stride = 2 * row;
  const auto q =
      cuda_test::random_floats(static_cast<size_t>(B * q_stride), seed + 2, -kQAmp, kQAmp);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));

  // References: dequantized pages, f32 pages (rows of padding requests stay zero).
  std::vector<float> want_deq(static_cast<size_t>(B * row), 0.0f), want_f32(want_deq.size(), 0.0f);
  for (int b = 0; b < B; ++b) {
    const int32_t* t = p.table.data() + b * p.width;
    const float* qb = q.data() + b * q_stride;
    const int first = window_first(lens[b] - 1, window);
    cuda_test::reference_attention(p.pages.shape, p.pages.k_deq.data(), p.pages.v_deq.data(), t,
                                   lens[b], qb, H, scale, want_deq.data() + b * row, first);
    cuda_test::reference_attention(p.pages.shape, p.pages.k_f32.data(), p.pages.v_f32.data(), t,
                                   lens[b], qb, H, scale, want_f32.data() + b * row, first);
  }

  DevicePages d(p);
  DeviceBuffer<float> dq(q);
  DeviceBuffer<uint16_t> out(std::vector<uint16_t>(static_cast<size_t>(B * out_stride), 0x7fc0));
  kc::DecodePlanConfig cfg;
  cfg.block_size = p.pages.shape.block_size;
  cfg.num_kv_heads = nkv;
  cfg.min_split = 64;  // several splits per long request: the merge path too
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&cfg.num_sms, cudaDevAttrMultiProcessorCount, device),
            cudaSuccess);
  ASSERT_EQ(kc::decode_attention_ctas_per_sm(D, H, nkv, &cfg.ctas_per_sm, dtype), cudaSuccess);
  ASSERT_GE(cfg.ctas_per_sm, 1);
  const int capacity = kc::decode_plan_capacity(B, cfg);
  kc::DecodePlan plan;
  ASSERT_TRUE(kc::plan_decode(lens.data(), B, cfg, capacity, plan));
  std::vector<int32_t> packed(static_cast<size_t>(kc::decode_plan_ints(capacity, B)));
  ASSERT_TRUE(kc::pack_decode_plan(plan, capacity, B, packed.data()));
  DeviceBuffer<int32_t> dplan(packed);
  DeviceBuffer<float> ws(static_cast<size_t>(kc::decode_workspace_floats(capacity, H, D)));
  kc::DecodeAttentionParams a;
  a.kv = d.kv(p, d.table.get());
  a.q = dq.get();
  a.q_row_stride = q_stride;
  a.out = out.get();
  a.out_row_stride = out_stride;
  a.plan = dplan.get();
  a.plan_capacity = capacity;
  a.workspace = ws.get();
  a.num_requests = B;
  a.num_heads = H;
  a.scale = static_cast<float>(scale);
  DeviceBuffer<int32_t> dlens(lens);
  a.sliding_window = window;
  a.seq_lens = dlens.get();
  ASSERT_EQ(kc::decode_attention(a, nullptr), cudaSuccess);
  const auto got = cuda_test::bf16_rows_to_f32(out.download(), B, row, out_stride);

  const std::string name =
      describe("decode_attention", dtype, D, group) + " window " + std::to_string(window);
  EXPECT_GT(plan.num_partials, 0);
  EXPECT_TRUE(near_all(name + " vs dequantized", got, want_deq, kDecodeAtol, kDecodeRtol));
  EXPECT_TRUE(near_all(name + " vs f32 K/V", got, want_f32,
                       dtype == KvDtype::kInt8 ? kInt8Bound : kFp8Bound, 0.0f));
  if (dtype == KvDtype::kInt8) {  // the CPU kernel over the same int8 pages (non-empty rows)
    std::vector<int32_t> seq, rows_tab;
    std::vector<float> qc, gotc;
    for (int b = 0; b < B; ++b) {
      if (lens[b] == 0) continue;
      seq.push_back(lens[b]);
      rows_tab.insert(rows_tab.end(), p.table.begin() + b * p.width,
                      p.table.begin() + (b + 1) * p.width);
      qc.insert(qc.end(), q.begin() + b * q_stride, q.begin() + b * q_stride + row);
      gotc.insert(gotc.end(), got.begin() + b * row, got.begin() + (b + 1) * row);
    }
    std::vector<float> cpu(qc.size());
    kernels::decode_attention(cpu_pool(), cpu_kv(p, rows_tab.data(), window), qc.data(), seq.data(),
                              static_cast<int64_t>(seq.size()), H, static_cast<float>(scale),
                              cpu.data());
    EXPECT_TRUE(near_all(name + " vs CPU int8", gotc, cpu, kDecodeAtol, kDecodeRtol));
  }
  std::printf("[ %s ] max |out - f32 attention| %.4f\n", name.c_str(),
              cuda_test::max_abs_diff(got, want_f32));
}

TEST(CudaKvQuantAttention, DecodeMatchesReferences) {
  LLMSERVE_REQUIRE_CUDA();
  for (KvDtype dtype : {KvDtype::kInt8, KvDtype::kFp8}) {
    for (int D : {64, 128}) {
      for (int G : {1, 3, 8}) check_decode(dtype, D, G, 1000 + D + G);
    }
  }
}

// --- prefill ---

struct Chunk {
  int q_len, cached;
};

void check_prefill(KvDtype dtype, int D, int group, uint32_t seed, int window = 0) {
  const int nkv = 2, H = nkv * group;
  const std::vector<Chunk> reqs = {{1, 0}, {17, 0},  {64, 0},  {65, 0},   {130, 0},
                                   {0, 5}, {17, 40}, {1, 300}, {65, 100}, {129, 63}};
  std::vector<int32_t> lens, qs = {0};
  int T = 0, max_q = 0;
  for (const Chunk& c : reqs) {
    lens.push_back(c.cached + c.q_len);
    T += c.q_len;
    qs.push_back(T);
    max_q = std::max(max_q, c.q_len);
  }
  const Paged p = make_pages(dtype, D, nkv, lens, seed);
  const int B = static_cast<int>(reqs.size());
  const int64_t row = int64_t{H} * D, q_stride = row + 2 * int64_t{nkv} * D, out_stride = 2 * row;
  const auto q =
      cuda_test::random_floats(static_cast<size_t>(T * q_stride), seed + 2, -kQAmp, kQAmp);
  const auto q_bf16 = cuda_test::round_bf16(q);  // the kernel rounds Q to bf16
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));

  std::vector<float> want_deq(static_cast<size_t>(T * row)), want_f32(want_deq.size());
  std::vector<float> q_tight(want_deq.size());  // [T, H, D] for the CPU kernel
  for (int b = 0; b < B; ++b) {
    const int32_t* t = p.table.data() + b * p.width;
    for (int i = 0; i < reqs[b].q_len; ++i) {
      const int r = qs[b] + i, n = reqs[b].cached + i + 1;  // positions 0..its own
      const int first = window_first(n - 1, window);
      cuda_test::reference_attention(p.pages.shape, p.pages.k_deq.data(), p.pages.v_deq.data(), t,
                                     n, q_bf16.data() + r * q_stride, H, scale,
                                     want_deq.data() + r * row, first);
      cuda_test::reference_attention(p.pages.shape, p.pages.k_f32.data(), p.pages.v_f32.data(), t,
                                     n, q.data() + r * q_stride, H, scale,
                                     want_f32.data() + r * row, first);
      std::copy_n(q_bf16.begin() + r * q_stride, row, q_tight.begin() + r * row);
    }
  }

  DevicePages d(p);
  DeviceBuffer<float> dq(q);
  DeviceBuffer<int32_t> dqs(qs), dseq(lens);
  DeviceBuffer<uint16_t> out(std::vector<uint16_t>(static_cast<size_t>(T * out_stride), 0x7fc1));
  kc::PrefillAttentionParams a;
  a.kv = d.kv(p, d.table.get());
  a.q = dq.get();
  a.q_row_stride = q_stride;
  a.query_start = dqs.get();
  a.seq_lens = dseq.get();
  a.num_seqs = B;
  a.max_q_len = max_q;
  a.num_heads = H;
  a.scale = static_cast<float>(scale);
  a.out = out.get();
  a.out_row_stride = out_stride;
  a.sliding_window = window;
  ASSERT_EQ(kc::prefill_attention(a, nullptr), cudaSuccess);
  const auto got = cuda_test::bf16_rows_to_f32(out.download(), T, row, out_stride);

  const std::string name =
      describe("prefill_attention", dtype, D, group) + " window " + std::to_string(window);
  EXPECT_TRUE(near_all(name + " vs dequantized", got, want_deq, kPrefillTol, kPrefillTol));
  EXPECT_TRUE(near_all(name + " vs f32 K/V", got, want_f32,
                       dtype == KvDtype::kInt8 ? kInt8Bound : kFp8Bound, 0.0f));
  if (dtype == KvDtype::kInt8) {
    std::vector<float> cpu(q_tight.size());
    kernels::prefill_attention(cpu_pool(), cpu_kv(p, p.table.data(), window), q_tight.data(),
                               qs.data(), lens.data(), B, H, static_cast<float>(scale), cpu.data());
    // On AVX-512 VNNI hosts the CPU kernel also rounds each query head to int8 (the GPU keeps q
    // in bf16): two roundings apart, so the decode test's bounds, not the bf16-only ones.
    EXPECT_TRUE(near_all(name + " vs CPU int8", got, cpu, kDecodeAtol, kDecodeRtol));
  }
  std::printf("[ %s ] max |out - f32 attention| %.4f\n", name.c_str(),
              cuda_test::max_abs_diff(got, want_f32));
}

TEST(CudaKvQuantAttention, PrefillMatchesReferences) {
  LLMSERVE_REQUIRE_CUDA();
  for (KvDtype dtype : {KvDtype::kInt8, KvDtype::kFp8}) {
    for (int D : {64, 128}) {
      for (int G : {1, 3, 8}) check_prefill(dtype, D, G, 2000 + D + G);
    }
  }
}

// Sliding windows over 8-bit pages: window starts inside a page, at odd keys (decode begins at
// lo & ~1), inside a scale group of 8 keys and at a tile edge.
TEST(CudaKvQuantAttention, SlidingWindowsMatchReferences) {
  LLMSERVE_REQUIRE_CUDA();
  for (KvDtype dtype : {KvDtype::kInt8, KvDtype::kFp8}) {
    for (int W : {1, 7, 31, 64, 100}) {
      check_decode(dtype, 128, 3, 3000 + W, W);
      check_prefill(dtype, 64, 3, 4000 + W, W);
    }
  }
}

// --- host-side checks, no device needed ---

TEST(CudaKvQuantAttentionHost, DecodeRejectsBrokenQuantizedCaches) {
  auto* f = reinterpret_cast<float*>(uintptr_t{4096});
  auto* u16 = reinterpret_cast<uint16_t*>(uintptr_t{4096});
  auto* i32 = reinterpret_cast<int32_t*>(uintptr_t{4096});
  kc::DecodeAttentionParams ok;
  ok.kv = {u16, u16, i32, 8, 2, 16, 128, KvDtype::kInt8, u16, u16};
  ok.q = f;
  ok.q_row_stride = 1024;
  ok.out = u16;
  ok.out_row_stride = 2048;
  ok.plan = i32;
  ok.plan_capacity = 10;
  ok.workspace = f;
  ok.num_requests = 0;  // valid and empty: nothing launched
  ok.num_heads = 8;
  ok.scale = 0.088f;
  EXPECT_EQ(kc::decode_attention(ok, nullptr), cudaSuccess);
  ok.num_requests = 4;
  auto bad = [&](auto change) {
    kc::DecodeAttentionParams p = ok;
    change(p);
    return kc::decode_attention(p, nullptr);
  };
  EXPECT_EQ(bad([](auto& p) { p.kv.k_scales = nullptr; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([](auto& p) {
              p.kv.dtype = KvDtype::kFp8;
              p.kv.v_scales = nullptr;
            }),
            cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.kv.v_scales = u16 + 1; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([](auto& p) { p.kv.block_size = 15; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([](auto& p) { p.kv.dtype = KvDtype::kF32; }), cudaErrorInvalidValue);
  EXPECT_EQ(bad([&](auto& p) { p.kv.k_cache = u16 + 4; }), cudaErrorInvalidValue);
  int n = 0;
  EXPECT_EQ(kc::decode_attention_ctas_per_sm(128, 8, 2, &n, KvDtype::kF32), cudaErrorInvalidValue);
}

TEST(CudaKvQuantAttentionHost, PrefillChecksQuantizedCaches) {
  alignas(16) static uint8_t cache[64];
  alignas(16) static uint16_t scales[16];
  alignas(16) static float q[16];
  alignas(16) static int32_t ints[16];
  alignas(16) static uint16_t out[16];
  kc::PrefillAttentionParams p;
  p.kv = {cache, cache, ints, 4, 8, 16, 128, KvDtype::kFp8, scales, scales};
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
  EXPECT_EQ(kc::prefill_attention_check(p), cudaSuccess);
  for (int i = 0; i < 4; ++i) {
    kc::PrefillAttentionParams b = p;
    if (i == 0) b.kv.k_scales = nullptr;
    if (i == 1) b.kv.v_scales = scales + 2;  // 4- but not 16-byte aligned
    if (i == 2) b.kv.dtype = KvDtype::kF32;
    if (i == 3) b.kv.v_cache = cache + 8;
    EXPECT_EQ(kc::prefill_attention_check(b), cudaErrorInvalidValue) << "case " << i;
  }
  // Shared memory of the 8-bit variants: within sm_86's 99 KB, two CTAs per H100 / H200 SM.
  for (KvDtype dt : {KvDtype::kInt8, KvDtype::kFp8}) {
    for (int D : {64, 128}) {
      const int smem = kc::prefill_attention_smem_bytes(D, dt);
      EXPECT_GT(smem, 0);
      EXPECT_LE(smem, 99 * 1024);
      EXPECT_LE(2 * (smem + 1024), 228 * 1024);
    }
  }
  EXPECT_EQ(kc::prefill_attention_smem_bytes(128, KvDtype::kF32), 0);
}

}  // namespace
}  // namespace llmserve
