// Sliding-window attention (PagedKv::sliding_window, Mistral): prefill and decode against a
// double-precision reference that reads the pages back through the block tables (f16 and int8
// elements decoded here with the compiler's _Float16, independently of the kernels' F16C path)
// and attends only positions (pos - window, pos]. Every cache type (f32, f16, int8) and both the
// AVX-512 (head_dim % 16 == 0) and AVX2 paths run; ctest runs the suite again with
// LLMSERVE_CPU_ATTENTION_AVX2=1 and (int8, "KvInt8" in the name) LLMSERVE_CPU_ATTENTION_NO_VNNI=1.
// Outputs are convex combinations of V rows in [-1, 1]: 2e-5 absolute as in attention_test.cpp.
// The windows start inside blocks and partitions (256 keys) and cut across them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "llmserve/kernels/attention.h"
#include "llmserve/kernels/kv_cache_ops.h"

namespace llmserve::kernels {
namespace cpu {
bool attention_avx512_available();  // kernels/cpu/attention_core.h
bool attention_int8_vnni_available();
float quantize_query_int8(const float* q, int D, int8_t* out, int32_t* sum);
}  // namespace cpu
namespace {

float f16_value(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}

struct Case {
  KvCacheShape shape;
  int num_heads = 0;
  std::vector<int32_t> seq_lens, q_lens, block_tables;
  int64_t max_blocks = 0;
  std::vector<unsigned char> k_cache, v_cache;  // elements of shape.dtype
  std::vector<uint16_t> k_scales, v_scales;     // int8
  // What the pages hold, decoded: [request][pos][kv_head][head_dim].
  std::vector<std::vector<float>> k, v;

  PagedKv view(int64_t window) const {
    const bool scaled = shape.dtype == KvDtype::kInt8;
    PagedKv kv{shape,
               k_cache.data(),
               v_cache.data(),
               block_tables.data(),
               max_blocks,
               scaled ? k_scales.data() : nullptr,
               scaled ? v_scales.data() : nullptr};
    kv.sliding_window = window;
    return kv;
  }
};

Case make_case(std::mt19937& rng, int D, int KVH, int ratio, int bs, KvDtype dtype,
               std::vector<int32_t> seq_lens, std::vector<int32_t> q_lens) {
  Case s;
  s.seq_lens = std::move(seq_lens);
  s.q_lens = std::move(q_lens);
  s.num_heads = KVH * ratio;
  const int64_t B = s.seq_lens.size();
  int64_t total_blocks = 2;  // unused blocks too
  for (auto L : s.seq_lens) {
    s.max_blocks = std::max<int64_t>(s.max_blocks, (L + bs - 1) / bs);
    total_blocks += (L + bs - 1) / bs;
  }
  s.shape = KvCacheShape{total_blocks, KVH, bs, D, dtype};
  std::vector<int32_t> ids(total_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  s.block_tables.assign(B * s.max_blocks, -1);
  const size_t rows = static_cast<size_t>(total_blocks) * KVH * bs;
  const size_t eb = static_cast<size_t>(kv_dtype_bytes(dtype));
  // NaN bit patterns (0xff bytes: f32 and f16 NaNs) in unwritten slots: they must never be read.
  // For int8 the scales are NaN there.
  s.k_cache.assign(rows * D * eb, 0xff);
  s.v_cache.assign(rows * D * eb, 0xff);
  s.k_scales.assign(rows, uint16_t{0x7e00});
  s.v_scales.assign(rows, uint16_t{0x7e00});
  int64_t next = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = s.seq_lens[b], row = int64_t{KVH} * D;
    for (int64_t i = 0; i < (L + bs - 1) / bs; ++i)
      s.block_tables[b * s.max_blocks + i] = ids[next++];
    const auto kf = testing::random_floats(rng, L * row), vf = testing::random_floats(rng, L * row);
    std::vector<int32_t> slots(L);
    for (int64_t p = 0; p < L; ++p)
      slots[p] = s.block_tables[b * s.max_blocks + p / bs] * bs + p % bs;
    const int64_t hist = L - s.q_lens[b];
    const bool scaled = dtype == KvDtype::kInt8;
    for (auto [t0, n] : {std::pair{int64_t{0}, hist}, std::pair{hist, L - hist}}) {
      write_kv(s.shape, kf.data() + t0 * row, vf.data() + t0 * row, slots.data() + t0, n,
               s.k_cache.data(), s.v_cache.data(), scaled ? s.k_scales.data() : nullptr,
               scaled ? s.v_scales.data() : nullptr);
    }
    auto& kd = s.k.emplace_back(L * row);
    auto& vd = s.v.emplace_back(L * row);
    for (int64_t p = 0; p < L; ++p) {
      for (int h = 0; h < KVH; ++h) {
        const int64_t si = kv_scale_offset(s.shape, slots[p], h);
        for (int i = 0; i < D; ++i) {
          const size_t e = static_cast<size_t>(si * D + i);
          float kx = 0, vx = 0;
          if (dtype == KvDtype::kF32) {
            std::memcpy(&kx, s.k_cache.data() + 4 * e, 4);
            std::memcpy(&vx, s.v_cache.data() + 4 * e, 4);
          } else if (dtype == KvDtype::kF16) {
            uint16_t kb, vb;
            std::memcpy(&kb, s.k_cache.data() + 2 * e, 2);
            std::memcpy(&vb, s.v_cache.data() + 2 * e, 2);
            kx = f16_value(kb);
            vx = f16_value(vb);
          } else {
            kx = static_cast<float>(static_cast<int8_t>(s.k_cache[e])) * f16_value(s.k_scales[si]);
            vx = static_cast<float>(static_cast<int8_t>(s.v_cache[e])) * f16_value(s.v_scales[si]);
          }
          kd[(p * KVH + h) * D + i] = kx;
          vd[(p * KVH + h) * D + i] = vx;
        }
      }
    }
  }
  return s;
}

// Softmax attention in double of q over positions [lo, pos] of request b, kv head kvh.
void reference(const Case& s, int64_t b, const float* q, int kvh, int64_t lo, int64_t pos,
               float scale, std::vector<double>& out) {
  const int D = s.shape.head_dim, KVH = s.shape.num_kv_heads;
  std::vector<double> w(pos + 1 - lo);
  double mx = -1e300;
  for (int64_t j = lo; j <= pos; ++j) {
    const float* kj = s.k[b].data() + (j * KVH + kvh) * D;
    double d = 0;
    for (int i = 0; i < D; ++i) d += double{q[i]} * kj[i];
    mx = std::max(mx, w[j - lo] = d * scale);
  }
  double sum = 0;
  for (auto& x : w) sum += (x = std::exp(x - mx));
  out.assign(D, 0.0);
  for (int64_t j = lo; j <= pos; ++j) {
    for (int i = 0; i < D; ++i) out[i] += w[j - lo] / sum * s.v[b][(j * KVH + kvh) * D + i];
  }
}

struct Param {
  int head_dim;
  KvDtype dtype;
};

void run_windows(const Param& param) {
  const auto [D, dtype] = param;
  const int KVH = 2, ratio = 2, bs = 16;
  std::mt19937 rng(D * 7 + static_cast<int>(dtype));
  // A whole prompt, a single token, chunks after cached prefixes (one past a partition edge).
  Case s = make_case(rng, D, KVH, ratio, bs, dtype, {9, 1, 300, 700}, {9, 1, 40, 23});
  const int H = s.num_heads;
  const int64_t B = s.seq_lens.size();
  std::vector<int32_t> qs(B + 1, 0);
  for (int64_t b = 0; b < B; ++b) qs[b + 1] = qs[b] + s.q_lens[b];
  const int64_t T = qs[B];
  const auto q = testing::random_floats(rng, T * H * D, -2.0f, 2.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool vnni = dtype == KvDtype::kInt8 && D % 16 == 0 && cpu::attention_avx512_available() &&
                    cpu::attention_int8_vnni_available();
  ThreadPool pool(2);
  std::vector<int8_t> q8(D);
  std::vector<float> q_used(D);
  std::vector<double> ref, full;
  for (int64_t window : {1, 5, 16, 100, 256, 300, 5000}) {
    SCOPED_TRACE("window " + std::to_string(window));
    std::vector<float> out(T * H * D, NAN);
    prefill_attention(pool, s.view(window), q.data(), qs.data(), s.seq_lens.data(), B, H, scale,
                      out.data());
    double worst = 0, moved = 0;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < s.q_lens[b]; ++i) {
        const int64_t t = qs[b] + i, pos = s.seq_lens[b] - s.q_lens[b] + i;
        const int64_t lo = std::max<int64_t>(0, pos + 1 - window);
        for (int h = 0; h < H; ++h) {
          const float* qh = q.data() + (t * H + h) * D;
          std::copy(qh, qh + D, q_used.begin());
          if (vnni) {  // the kernel rounds q per head to int8: the reference reads that q
            int32_t sum = 0;
            const float qscale = cpu::quantize_query_int8(qh, D, q8.data(), &sum);
            for (int d = 0; d < D; ++d) q_used[d] = static_cast<float>(q8[d]) * qscale;
          }
          reference(s, b, q_used.data(), h / ratio, lo, pos, scale, ref);
          if (lo > 0) reference(s, b, q_used.data(), h / ratio, 0, pos, scale, full);
          const float* o = out.data() + (t * H + h) * D;
          for (int d = 0; d < D; ++d) {
            worst = std::max(worst, std::fabs(o[d] - ref[d]));
            if (lo > 0) moved = std::max(moved, std::fabs(full[d] - ref[d]));
          }
        }
      }
    }
    EXPECT_LT(worst, 2e-5) << "prefill vs windowed reference";
    // The window must matter for the windows shorter than the longest context.
    if (window < 700) {
      EXPECT_GT(moved, 1e-2) << "the window changed no output";
    }

    // Decode of each request's last query: bit-identical to its prefill row, batched or alone.
    std::vector<float> qd(B * H * D), dec(B * H * D, NAN);
    for (int64_t b = 0; b < B; ++b) {
      std::memcpy(qd.data() + b * H * D, q.data() + (qs[b + 1] - 1) * H * D, H * D * sizeof(float));
    }
    decode_attention(pool, s.view(window), qd.data(), s.seq_lens.data(), B, H, scale, dec.data());
    for (int64_t b = 0; b < B; ++b) {
      EXPECT_EQ(0, std::memcmp(dec.data() + b * H * D, out.data() + (qs[b + 1] - 1) * H * D,
                               H * D * sizeof(float)))
          << "decode vs prefill, seq_len " << s.seq_lens[b];
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const char* t = info.param.dtype == KvDtype::kF32   ? "f32"
                  : info.param.dtype == KvDtype::kF16 ? "f16"
                                                      : "int8";
  return "D" + std::to_string(info.param.head_dim) + "_" + t;
}

class SlidingWindowAttention : public ::testing::TestWithParam<Param> {};

TEST_P(SlidingWindowAttention, PrefillAndDecodeMatchWindowedReference) {
  run_windows(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Shapes, SlidingWindowAttention,
                         ::testing::Values(Param{64, KvDtype::kF32}, Param{64, KvDtype::kF16},
                                           Param{24, KvDtype::kF32}, Param{24, KvDtype::kF16}),
                         param_name);

// int8 pages (named for ctest's no-VNNI rerun, which filters on KvInt8).
class SlidingWindowKvInt8Attention : public ::testing::TestWithParam<Param> {};

TEST_P(SlidingWindowKvInt8Attention, PrefillAndDecodeMatchWindowedReference) {
  run_windows(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Shapes, SlidingWindowKvInt8Attention,
                         ::testing::Values(Param{64, KvDtype::kInt8}, Param{24, KvDtype::kInt8}),
                         param_name);

}  // namespace
}  // namespace llmserve::kernels
