// attention_any_head (head dims the tiled kernels do not take: Phi-3's 96, Gemma 3's 256) against
// double-precision attention over the same pages: bf16, int8 and e4m3 caches, GQA groups 1 / 4,
// prefill chunks after cached pages and the decode form (one row per request, a padding request
// of length 0 gets zeros), sliding windows, scattered pages whose unused slots hold NaN. Host-side
// shape checks run without a device.
#include "llmserve/kernels/cuda/attention_any_head.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/cuda/cuda_test_util.h"
#include "tests/unit/cuda/kv_quant_util.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;
using cuda_test::DeviceBuffer;
using cuda_test::near_all;
using kernels::KvDtype;

// f32 q and f32 accumulation: the bf16 output (2^-9 relative) and exp2f / summation order.
constexpr float kTol = 1.0f / 256 + 1e-5f;

struct Chunk {
  int q_len, cached;
};

// Pages of `dtype` (bf16 pages carry the f32 values rounded to bf16; NaN in unused slots; int8
// ones make the scattered layout) and the f32 copy the reference reads.
struct Pages {
  cuda_test::ScatteredPages s;
  KvDtype dtype;
  std::vector<float> k_ref, v_ref;
};

Pages make_pages(KvDtype dtype, int D, int nkv, const std::vector<int32_t>& lens, uint32_t seed) {
  const KvDtype stored = dtype == KvDtype::kF16 ? KvDtype::kInt8 : dtype;
  Pages p{cuda_test::scattered_pages(stored, D, nkv, lens, seed), dtype, {}, {}};
  const cuda_test::QuantPages& q = p.s.pages;
  p.k_ref = dtype == KvDtype::kF16 ? cuda_test::round_bf16(q.k_f32) : q.k_deq;
  p.v_ref = dtype == KvDtype::kF16 ? cuda_test::round_bf16(q.v_f32) : q.v_deq;
  return p;
}

struct DevicePages {
  DeviceBuffer<uint8_t> k8, v8;
  DeviceBuffer<uint16_t> k16, v16, ks, vs;
  DeviceBuffer<int32_t> table;
  explicit DevicePages(const Pages& p)
      : k8(p.s.pages.k),
        v8(p.s.pages.v),
        k16(cuda_test::to_bf16(p.s.pages.k_f32)),
        v16(cuda_test::to_bf16(p.s.pages.v_f32)),
        ks(p.s.pages.ks),
        vs(p.s.pages.vs),
        table(p.s.table) {}
  kc::PagedKvDevice kv(const Pages& p) const {
    kc::PagedKvDevice d;
    const bool bf16 = p.dtype == KvDtype::kF16;
    d.k_cache = bf16 ? static_cast<const void*>(k16.get()) : k8.get();
    d.v_cache = bf16 ? static_cast<const void*>(v16.get()) : v8.get();
    d.block_tables = table.get();
    d.block_table_stride = p.s.width;
    d.num_kv_heads = p.s.pages.shape.num_kv_heads;
    d.block_size = p.s.pages.shape.block_size;
    d.head_dim = p.s.pages.shape.head_dim;
    d.dtype = p.dtype;
    d.k_scales = bf16 ? nullptr : ks.get();
    d.v_scales = bf16 ? nullptr : vs.get();
    return d;
  }
};

std::string describe(const char* form, KvDtype dtype, int D, int group, int window) {
  return std::string(form) + " " + kernels::kv_dtype_name(dtype) + " head_dim " +
         std::to_string(D) + " group " + std::to_string(group) + " window " +
         std::to_string(window);
}

// decode: every chunk is {1, len - 1} (or {0, 0}, padding) and the kernel gets the decode form.
void check(KvDtype dtype, int D, int group, const std::vector<Chunk>& reqs, bool decode, int window,
           uint32_t seed) {
  const int nkv = 2, H = nkv * group;
  std::vector<int32_t> lens, qs = {0};
  int T = 0, max_q = 0;
  for (const Chunk& c : reqs) {
    lens.push_back(c.cached + c.q_len);
    T += decode ? 1 : c.q_len;
    qs.push_back(T);
    max_q = std::max(max_q, c.q_len);
  }
  const Pages p = make_pages(dtype, D, nkv, lens, seed);
  const int B = static_cast<int>(reqs.size());
  const int64_t row = int64_t{H} * D, q_stride = row + 2 * int64_t{nkv} * D, out_stride = 2 * row;
  const auto q = cuda_test::random_floats(static_cast<size_t>(T * q_stride), seed + 2, -2.0f, 2.0f);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<float> want(static_cast<size_t>(T * row), 0.0f);
  for (int b = 0; b < B; ++b) {
    const int32_t* t = p.s.table.data() + b * p.s.width;
    for (int i = 0; i < reqs[b].q_len; ++i) {
      const int r = qs[b] + i, n = reqs[b].cached + i + 1;
      const int first = window > 0 ? std::max(0, n - window) : 0;
      cuda_test::reference_attention(p.s.pages.shape, p.k_ref.data(), p.v_ref.data(), t, n,
                                     q.data() + r * q_stride, H, scale, want.data() + r * row,
                                     first);
    }
  }
  DevicePages d(p);
  DeviceBuffer<float> dq(q);
  DeviceBuffer<int32_t> dqs(qs), dseq(lens);
  DeviceBuffer<uint16_t> out(std::vector<uint16_t>(static_cast<size_t>(T * out_stride), 0x7fc1));
  kc::PrefillAttentionParams a;
  a.kv = d.kv(p);
  a.q = dq.get();
  a.q_row_stride = q_stride;
  a.query_start = decode ? nullptr : dqs.get();
  a.seq_lens = dseq.get();
  a.num_seqs = B;
  a.max_q_len = decode ? 1 : max_q;
  a.num_heads = H;
  a.scale = static_cast<float>(scale);
  a.out = out.get();
  a.out_row_stride = out_stride;
  a.sliding_window = window;
  ASSERT_EQ(kc::attention_any_head(a, nullptr), cudaSuccess);
  const auto raw = out.download();
  const auto got = cuda_test::bf16_rows_to_f32(raw, T, row, out_stride);
  const std::string name = describe(decode ? "decode" : "prefill", dtype, D, group, window);
  EXPECT_TRUE(near_all(name, got, want, kTol, kTol));
  for (int t = 0; t < T; ++t) {
    for (int64_t i = row; i < out_stride; ++i) {
      ASSERT_EQ(raw[t * out_stride + i], 0x7fc1) << name << ": wrote past the heads, row " << t;
    }
  }
}

const std::vector<Chunk> kPrefill = {{1, 0}, {17, 0},  {64, 0},  {130, 0},
                                     {0, 5}, {17, 40}, {1, 300}, {65, 100}};
const std::vector<Chunk> kDecode = {{1, 0}, {1, 16}, {1, 299}, {0, 0}, {1, 63}};

TEST(CudaAttentionAnyHead, MatchesDoublePrecisionOverDtypesHeadDimsAndGroups) {
  LLMSERVE_REQUIRE_CUDA();
  for (KvDtype dtype : {KvDtype::kF16, KvDtype::kInt8, KvDtype::kFp8}) {
    for (int D : {96, 256, 64}) {
      for (int G : {1, 4}) {
        check(dtype, D, G, kPrefill, false, 0, 100 + D + G);
        check(dtype, D, G, kDecode, true, 0, 200 + D + G);
      }
    }
  }
}

TEST(CudaAttentionAnyHead, SlidingWindowsMatch) {
  LLMSERVE_REQUIRE_CUDA();
  for (int W : {1, 7, 64, 100}) {
    check(KvDtype::kF16, 256, 2, kPrefill, false, W, 300 + W);
    check(KvDtype::kInt8, 96, 2, kDecode, true, W, 400 + W);
  }
}

// --- host-side checks, no device needed ---

TEST(CudaAttentionAnyHeadHost, SupportsMultiplesOf32UpTo256) {
  for (int D : {32, 64, 96, 128, 160, 256}) EXPECT_TRUE(kc::attention_any_head_supports(D)) << D;
  for (int D : {0, -32, 80, 100, 288, 512}) EXPECT_FALSE(kc::attention_any_head_supports(D)) << D;
}

TEST(CudaAttentionAnyHeadHost, RejectsBrokenShapesBeforeAnyLaunch) {
  auto* f = reinterpret_cast<float*>(uintptr_t{4096});
  auto* u = reinterpret_cast<uint16_t*>(uintptr_t{8192});
  auto* i = reinterpret_cast<int32_t*>(uintptr_t{12288});
  kc::PrefillAttentionParams good;
  good.kv = {u, u, i, 4, 2, 16, 96};
  good.q = f;
  good.q_row_stride = 8 * 96;
  good.query_start = i;
  good.seq_lens = i;
  good.num_seqs = 1;
  good.max_q_len = 1;
  good.num_heads = 8;
  good.scale = 0.1f;
  good.out = u;
  good.out_row_stride = 8 * 96;
  std::vector<std::pair<std::string, kc::PrefillAttentionParams>> broken;
  auto add = [&](std::string what, auto change) {
    kc::PrefillAttentionParams p = good;
    change(p);
    broken.emplace_back(std::move(what), p);
  };
  add("head_dim 80", [](auto& p) { p.kv.head_dim = 80; });
  add("heads not a multiple of KV heads", [](auto& p) { p.num_heads = 7; });
  add("no seq_lens", [](auto& p) { p.seq_lens = nullptr; });
  add("q row narrower than the heads", [](auto& p) { p.q_row_stride = 8 * 96 - 1; });
  add("int8 without scales", [](auto& p) { p.kv.dtype = KvDtype::kInt8; });
  add("scale 0", [](auto& p) { p.scale = 0.0f; });
  add("negative window", [](auto& p) { p.sliding_window = -1; });
  for (const auto& [what, p] : broken) {
    EXPECT_EQ(kc::attention_any_head(p, nullptr), cudaErrorInvalidValue) << what;
  }
  kc::PrefillAttentionParams empty = good;
  empty.num_seqs = 0;
  EXPECT_EQ(kc::attention_any_head(empty, nullptr), cudaSuccess);
}

}  // namespace
}  // namespace llmserve
