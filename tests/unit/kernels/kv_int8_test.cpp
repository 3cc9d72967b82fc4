// The int8 paged KV cache: the quantization rule (quantize_kv_row_int8), write_kv's placement of
// rows and scales, and prefill / decode attention reading int8 pages.
//
// Attention is checked twice per query head, against double-precision references that read K/V
// through the block tables:
//  - from the DEQUANTIZED cache (q * f16 scale, read back from the pages): only the kernels' f32
//    arithmetic differs, the same few ulps per accumulated term as the f32 / f16 caches of
//    attention_test.cpp, whose 2e-5 bound for |v| <= 1 becomes 2e-5 * max|v| here;
//  - from the unquantized f32 values, within a bound derived from the rule. Each element's error is
//    at most s/2 (s the row's scale; for f16 scales in the normal range the clamp costs at most
//    max|x| * 2^-11 = 0.06 s, and the f32 division 2^-24 relative: slack 1e-5 s). So score j moves
//    by at most dj = scale * |q|_1 * s_k,j / 2, and with dmax = max_j dj every softmax weight by a
//    factor within [e^-2dmax, e^2dmax]. Since sum_j w_j (v_j - o) = 0, the output moves by at most
//    (e^2dmax - 1) * sum_j w_j |v_j - o| (w, o: f32 reference) from the scores, plus
//    sum_j w~_j s_v,j / 2 (w~: dequantized weights) from the values, plus the f32 term above.
//    The bound is reached at context 1 (the output is one dequantized V row) and is ~100x loose at
//    hundreds of keys, whose score errors do not all point the same way.
// The AVX-512 and AVX2 paths are picked once per process: ctest runs these tests a second time with
// LLMSERVE_TEST_CPU_ISA=avx2 (tests/unit/kernels/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "llmserve/kernels/attention.h"
#include "llmserve/kernels/cpu_isa.h"
#include "llmserve/kernels/kv_cache_ops.h"

namespace llmserve::kernels {
namespace cpu {
bool attention_avx512_available();  // kernels/cpu/attention_core.h
bool attention_int8_vnni_available();
float quantize_query_int8(const float* q, int D, int8_t* out, int32_t* sum);
}  // namespace cpu
namespace {

constexpr double kSlack = 0.5 + 1e-5;  // quantization error per element, in units of the scale

// The compiler's _Float16 conversions, independent of the kernels' F16C path.
uint16_t f16_bits(float x) {
  const _Float16 h = static_cast<_Float16>(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
float f16_value(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}

// The rule written out plainly: s = f16(min(max|x| / 127, 65504)), q = clamp(rne(x / s), -127,
// 127).
uint16_t rule_quantize(const float* x, int n, int8_t* q) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const uint16_t bits = f16_bits(std::min(amax / 127.0f, kMaxKvScale));
  const float s = f16_value(bits);
  for (int i = 0; i < n; ++i) {
    q[i] =
        s == 0.0f ? 0 : static_cast<int8_t>(std::clamp(std::nearbyint(x[i] / s), -127.0f, 127.0f));
  }
  return bits;
}

// Quantizes x with the kernel, checks it against the rule bit for bit, returns q.
std::vector<int8_t> quantize_checked(const std::vector<float>& x, uint16_t* scale) {
  const int n = static_cast<int>(x.size());
  std::vector<int8_t> q(n + 8, int8_t{99}), want(n);
  quantize_kv_row_int8(x.data(), n, q.data(), scale);
  const uint16_t want_scale = rule_quantize(x.data(), n, want.data());
  EXPECT_EQ(*scale, want_scale) << "n=" << n;
  for (int i = 0; i < n; ++i) EXPECT_EQ(int{q[i]}, int{want[i]}) << "n=" << n << " i=" << i;
  for (int i = n; i < n + 8; ++i) EXPECT_EQ(q[i], 99) << "wrote past the row, n=" << n;
  q.resize(n);
  return q;
}

TEST(KvInt8Quantize, MatchesRuleAndRoundTripsWithinHalfAScale) {
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> log_mag(std::log(0.05f), std::log(1000.0f));
  for (int n : {1, 5, 8, 12, 36, 64, 128, 130}) {
    for (int row = 0; row < 20; ++row) {
      const float mag = std::exp(log_mag(rng));
      const auto x = testing::random_floats(rng, n, -mag, mag);
      uint16_t bits;
      const auto q = quantize_checked(x, &bits);
      const double s = f16_value(bits);
      float amax = 0.0f;
      for (float v : x) amax = std::max(amax, std::fabs(v));
      ASSERT_EQ(bits, f16_bits(amax / 127.0f));
      int max_q = 0;
      for (int i = 0; i < n; ++i) {
        EXPECT_LE(std::fabs(q[i] * s - x[i]), kSlack * s) << "n=" << n << " i=" << i;
        max_q = std::max(max_q, std::abs(int{q[i]}));
      }
      EXPECT_EQ(max_q, 127) << "the largest element spans the range";
    }
  }
}

TEST(KvInt8Quantize, ZeroAndUnderflowingRowsGiveZeroScaleAndZeros) {
  for (float v : {0.0f, -0.0f, 1e-6f, -3e-9f}) {  // max/127 below half the least f16 subnormal
    const std::vector<float> x(20, v);
    uint16_t bits = 0x1234;
    const auto q = quantize_checked(x, &bits);
    EXPECT_EQ(f16_value(bits), 0.0f) << v;
    for (int8_t e : q) EXPECT_EQ(e, 0) << v;
  }
}

TEST(KvInt8Quantize, ARowPastTheF16RangeSaturatesWithAFiniteScale) {
  for (float big : {1e7f, -3e8f, 3e38f}) {  // max / 127 over 65504
    std::vector<float> x(24, 1.0f);
    x[5] = big;
    x[6] = -big / 2;
    uint16_t bits = 0;
    const auto q = quantize_checked(x, &bits);
    EXPECT_EQ(f16_value(bits), 65504.0f) << big;
    EXPECT_EQ(q[5], big > 0 ? 127 : -127) << big;
    EXPECT_TRUE(std::isfinite(q[6] * f16_value(bits))) << big;
  }
}

TEST(KvInt8Quantize, OneHugeOutlier) {
  std::mt19937 rng(22);
  for (float big : {1000.0f, -1000.0f}) {
    auto x = testing::random_floats(rng, 64, -0.01f, 0.01f);
    x[37] = big;
    uint16_t bits;
    const auto q = quantize_checked(x, &bits);
    const float s = f16_value(bits);
    EXPECT_EQ(bits, f16_bits(1000.0f / 127.0f));
    EXPECT_EQ(q[37], big > 0 ? 127 : -127);
    for (int i = 0; i < 64; ++i) {
      if (i != 37) {
        EXPECT_EQ(q[i], 0) << i;  // swamped: |x| < s/2
      }
      EXPECT_LE(std::fabs(q[i] * double{s} - x[i]), kSlack * s);
    }
  }
}

TEST(KvInt8Quantize, NegativeValuesAreSymmetric) {
  std::mt19937 rng(23);
  auto x = testing::random_floats(rng, 40, -3.0f, -1.0f);
  x[5] = -3.5f;
  uint16_t bits;
  const auto q = quantize_checked(x, &bits);
  EXPECT_EQ(q[5], -127);
  for (int i = 0; i < 40; ++i) {
    EXPECT_LT(q[i], 0);
    EXPECT_GE(q[i], -127);
  }
}

TEST(KvInt8Quantize, RoundsHalfToEven) {
  // max 63.5 -> s = 0.5 exactly, so x / s is exact: ties go to the even neighbour.
  const std::vector<float> x = {63.5f, 1.25f, 1.75f, -0.25f, -0.75f, 0.75f, 2.25f, -63.5f, 0.2f};
  uint16_t bits;
  const auto q = quantize_checked(x, &bits);
  EXPECT_EQ(f16_value(bits), 0.5f);
  EXPECT_EQ(q, (std::vector<int8_t>{127, 2, 4, 0, -2, 2, 4, -127, 0}));
}

TEST(KvInt8Quantize, ClampsWhenTheScaleRoundsDown) {
  // max / 127 = 1.4 * 2^-24 is an f16 subnormal: s rounds down to 2^-24 and max / s = 177.8.
  const float s = std::ldexp(1.0f, -24), amax = 1.4f * 127.0f * s;
  const std::vector<float> x = {amax, -amax, 0.5f * amax, -0.75f * amax, 10.4f * s};
  uint16_t bits;
  const auto q = quantize_checked(x, &bits);
  EXPECT_EQ(f16_value(bits), s);
  EXPECT_EQ(q, (std::vector<int8_t>{127, -127, 89, -127, 10}));
}

// Rows of random magnitude (log-uniform in [0.1, 2]) so every scale matters.
std::vector<float> random_rows(std::mt19937& rng, int64_t rows, int D) {
  std::uniform_real_distribution<float> log_mag(std::log(0.1f), std::log(2.0f));
  std::vector<float> x = testing::random_floats(rng, rows * D);
  for (int64_t r = 0; r < rows; ++r) {
    const float m = std::exp(log_mag(rng));
    for (int i = 0; i < D; ++i) x[r * D + i] *= m;
  }
  return x;
}

TEST(KvInt8WriteKv, PlacesRowsAndScalesBySlot) {
  std::mt19937 rng(24);
  for (int D : {12, 64}) {
    const KvCacheShape shape{4, 2, 3, D, KvDtype::kInt8};
    const auto k = random_rows(rng, 5 * 2, D), v = random_rows(rng, 5 * 2, D);
    const std::vector<int32_t> slots = {7, 0, -1, 11, 5};
    std::vector<int8_t> kc(4 * 2 * 3 * D, int8_t{0x5a}), vc(kc.size(), int8_t{0x5a});
    std::vector<uint16_t> ks(4 * 2 * 3, 0xbeef), vs(ks.size(), 0xbeef);
    write_kv(shape, k.data(), v.data(), slots.data(), 5, kc.data(), vc.data(), ks.data(),
             vs.data());
    int rows = 0;
    std::vector<int8_t> want(D);
    for (int t = 0; t < 5; ++t) {
      if (slots[t] < 0) continue;
      for (int h = 0; h < 2; ++h, ++rows) {
        // HND: [block][head][offset], then [dim] for the pages.
        const size_t idx = (slots[t] / 3 * 2 + h) * 3 + slots[t] % 3;
        ASSERT_EQ(static_cast<int64_t>(idx), kv_scale_offset(shape, slots[t], h));
        ASSERT_EQ(static_cast<int64_t>(idx) * D, kv_cache_offset(shape, slots[t], h));
        for (auto [src, cache, scales] : {std::tuple{&k, &kc, &ks}, std::tuple{&v, &vc, &vs}}) {
          const uint16_t bits = rule_quantize(src->data() + (t * 2 + h) * D, D, want.data());
          EXPECT_EQ((*scales)[idx], bits) << "D=" << D << " t=" << t << " h=" << h;
          for (int i = 0; i < D; ++i)
            EXPECT_EQ(int{(*cache)[idx * D + i]}, int{want[i]}) << "i=" << i;
        }
      }
    }
    EXPECT_EQ(rows, 4 * 2);
    // Nothing else touched (a written byte may equal the sentinel, a written scale never does).
    EXPECT_EQ(std::count(ks.begin(), ks.end(), 0xbeef), static_cast<long>(ks.size()) - rows);
    EXPECT_EQ(std::count(vs.begin(), vs.end(), 0xbeef), static_cast<long>(vs.size()) - rows);
    for (size_t idx = 0; idx < ks.size(); ++idx) {
      if (ks[idx] != 0xbeef) continue;
      for (int i = 0; i < D; ++i) ASSERT_EQ(kc[idx * D + i], 0x5a);
      for (int i = 0; i < D; ++i) ASSERT_EQ(vc[idx * D + i], 0x5a);
    }
  }
}

struct Int8Case {
  KvCacheShape shape;
  int num_heads;
  std::vector<int32_t> seq_lens, q_lens, block_tables;
  int64_t max_blocks;
  std::vector<int8_t> k_cache, v_cache;
  std::vector<uint16_t> k_scales, v_scales;
  // Per request, [len, kv_heads, head_dim]: the f32 values written, and what the cache holds.
  std::vector<std::vector<float>> k_f32, v_f32, k_deq, v_deq;
  // Per request, [len, kv_heads]: the scales as floats.
  std::vector<std::vector<float>> k_s, v_s;
  float v_max = 0.0f;

  PagedKv view() const {
    return PagedKv{shape,      k_cache.data(),  v_cache.data(), block_tables.data(),
                   max_blocks, k_scales.data(), v_scales.data()};
  }
};

// Shuffled pages per request, written with write_kv in two calls (history, then the new tokens);
// unwritten slots hold NaN scales, so reading one poisons the output.
Int8Case make_case(std::mt19937& rng, int D, int KVH, int ratio, int bs,
                   std::vector<int32_t> seq_lens, std::vector<int32_t> q_lens) {
  Int8Case s;
  s.seq_lens = std::move(seq_lens);
  s.q_lens = std::move(q_lens);
  s.num_heads = KVH * ratio;
  const int64_t B = s.seq_lens.size();
  s.max_blocks = 0;
  int64_t total_blocks = 3;  // unused blocks too
  for (auto L : s.seq_lens) {
    s.max_blocks = std::max<int64_t>(s.max_blocks, (L + bs - 1) / bs);
    total_blocks += (L + bs - 1) / bs;
  }
  s.shape = KvCacheShape{total_blocks, KVH, bs, D, KvDtype::kInt8};
  std::vector<int32_t> ids(total_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  s.block_tables.assign(B * s.max_blocks, -1);
  const size_t rows = static_cast<size_t>(total_blocks) * KVH * bs;
  s.k_cache.assign(rows * D, int8_t{127});
  s.v_cache.assign(rows * D, int8_t{127});
  s.k_scales.assign(rows, uint16_t{0x7e00});
  s.v_scales.assign(rows, uint16_t{0x7e00});
  int64_t next = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = s.seq_lens[b];
    for (int64_t i = 0; i < (L + bs - 1) / bs; ++i)
      s.block_tables[b * s.max_blocks + i] = ids[next++];
    s.k_f32.push_back(random_rows(rng, L * KVH, D));
    s.v_f32.push_back(random_rows(rng, L * KVH, D));
    std::vector<int32_t> slots(L);
    for (int64_t p = 0; p < L; ++p)
      slots[p] = s.block_tables[b * s.max_blocks + p / bs] * bs + p % bs;
    const int64_t hist = L - s.q_lens[b], row = int64_t{KVH} * D;
    for (auto [t0, n] : {std::pair{int64_t{0}, hist}, std::pair{hist, L - hist}}) {
      write_kv(s.shape, s.k_f32[b].data() + t0 * row, s.v_f32[b].data() + t0 * row,
               slots.data() + t0, n, s.k_cache.data(), s.v_cache.data(), s.k_scales.data(),
               s.v_scales.data());
    }
    // Read back through the block table: the values attention must see.
    auto& kd = s.k_deq.emplace_back(L * row);
    auto& vd = s.v_deq.emplace_back(L * row);
    auto& ks = s.k_s.emplace_back(L * KVH);
    auto& vs = s.v_s.emplace_back(L * KVH);
    for (int64_t p = 0; p < L; ++p) {
      for (int h = 0; h < KVH; ++h) {
        const int64_t si = kv_scale_offset(s.shape, slots[p], h);
        ks[p * KVH + h] = f16_value(s.k_scales[si]);
        vs[p * KVH + h] = f16_value(s.v_scales[si]);
        for (int i = 0; i < D; ++i) {
          kd[(p * KVH + h) * D + i] = s.k_cache[si * D + i] * ks[p * KVH + h];
          vd[(p * KVH + h) * D + i] = s.v_cache[si * D + i] * vs[p * KVH + h];
          s.v_max = std::max(s.v_max, std::fabs(vd[(p * KVH + h) * D + i]));
        }
      }
    }
  }
  return s;
}

// Softmax attention of q over k / v rows [0, n) (stride KVH * D from kv head kvh) in double;
// weights w (normalised) and output o.
void attend_ref(const float* q, const float* k, const float* v, int64_t n, int KVH, int kvh, int D,
                double scale, std::vector<double>& w, std::vector<double>& o) {
  w.assign(n, 0.0);
  double mx = -1e300;
  for (int64_t j = 0; j < n; ++j) {
    const float* kj = k + (j * KVH + kvh) * D;
    double d = 0;
    for (int i = 0; i < D; ++i) d += double{q[i]} * kj[i];
    mx = std::max(mx, w[j] = d * scale);
  }
  double sum = 0;
  for (auto& x : w) sum += (x = std::exp(x - mx));
  for (auto& x : w) x /= sum;
  o.assign(D, 0.0);
  for (int64_t j = 0; j < n; ++j) {
    for (int i = 0; i < D; ++i) o[i] += w[j] * v[(j * KVH + kvh) * D + i];
  }
}

// Checks one query head's output against both references (file comment).
void check_head(const Int8Case& s, int64_t b, const float* q, int head, int64_t pos, float scale,
                const float* out, double* worst_deq, double* worst_f32_ratio) {
  const int D = s.shape.head_dim, KVH = s.shape.num_kv_heads;
  const int kvh = head / (s.num_heads / KVH);
  const int64_t n = pos + 1;
  std::vector<double> wd, od, wf, of;
  attend_ref(q, s.k_deq[b].data(), s.v_deq[b].data(), n, KVH, kvh, D, scale, wd, od);
  attend_ref(q, s.k_f32[b].data(), s.v_f32[b].data(), n, KVH, kvh, D, scale, wf, of);
  double q1 = 0, delta = 0, v_term = 0;
  for (int i = 0; i < D; ++i) q1 += std::fabs(q[i]);
  for (int64_t j = 0; j < n; ++j) {
    delta = std::max(delta, scale * q1 * s.k_s[b][j * KVH + kvh] * kSlack);
    v_term += wd[j] * s.v_s[b][j * KVH + kvh] * kSlack;
  }
  const double tol = 2e-5 * s.v_max;
  for (int i = 0; i < D; ++i) {
    double mad = 0;
    for (int64_t j = 0; j < n; ++j)
      mad += wf[j] * std::fabs(s.v_f32[b][(j * KVH + kvh) * D + i] - of[i]);
    const double bound = std::expm1(2 * delta) * mad + v_term + tol;
    const double e_deq = std::fabs(out[i] - od[i]), e_f32 = std::fabs(out[i] - of[i]);
    *worst_deq = std::max(*worst_deq, e_deq);
    *worst_f32_ratio = std::max(*worst_f32_ratio, e_f32 / bound);
    ASSERT_LE(e_deq, tol) << "vs dequantized: b=" << b << " pos=" << pos << " head=" << head
                          << " d=" << i << " out=" << out[i] << " ref=" << od[i];
    ASSERT_LE(e_f32, bound) << "vs f32: b=" << b << " pos=" << pos << " head=" << head << " d=" << i
                            << " out=" << out[i] << " ref=" << of[i];
  }
}

struct Int8Grid {
  int head_dim, ratio;
};

class KvInt8Attention : public ::testing::TestWithParam<Int8Grid> {};

TEST_P(KvInt8Attention, PrefillAndDecodeMatchReferences) {
  const auto [D, ratio] = GetParam();
  const bool avx512 = cpu::attention_avx512_available() && D % 16 == 0;
  SCOPED_TRACE(avx512 ? "AVX-512 path" : "AVX2 path");
  if (active_cpu_isa() == CpuIsa::kAvx2) {
    ASSERT_FALSE(cpu::attention_avx512_available());
  }
  const int KVH = 2, bs = 16;
  std::mt19937 rng(D * 10 + ratio);
  // Context lengths around block (16) and partition (256) edges; prefill rows: whole prompts,
  // chunks after a cached prefix, single tokens.
  Int8Case s = make_case(rng, D, KVH, ratio, bs, {1, 15, 16, 17, 255, 256, 257, 600},
                         {1, 15, 4, 17, 3, 256, 2, 9});
  const int H = s.num_heads;
  const int64_t B = s.seq_lens.size();
  std::vector<int32_t> qs(B + 1, 0);
  for (int64_t b = 0; b < B; ++b) qs[b + 1] = qs[b] + s.q_lens[b];
  const int64_t T = qs[B];
  const auto q = testing::random_floats(rng, T * H * D, -2.0f, 2.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  ThreadPool pool(2);
  std::vector<float> out(T * H * D, NAN);
  prefill_attention(pool, s.view(), q.data(), qs.data(), s.seq_lens.data(), B, H, scale,
                    out.data());
  double worst_deq = 0, worst_ratio = 0;
  // On VNNI the kernel rounds q per head (cpu::quantize_query_int8): the references read that q.
  const bool vnni = avx512 && cpu::attention_int8_vnni_available();
  SCOPED_TRACE(vnni ? "q rounded to int8 (VNNI)" : "f32 q");
  std::vector<int8_t> q8(D);
  std::vector<float> q_used(D);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < s.q_lens[b]; ++i) {
      const int64_t t = qs[b] + i, pos = s.seq_lens[b] - s.q_lens[b] + i;
      for (int h = 0; h < H; ++h) {
        const float* qh = q.data() + (t * H + h) * D;
        std::copy(qh, qh + D, q_used.begin());
        if (vnni) {
          int32_t sum = 0;
          const float qscale = cpu::quantize_query_int8(qh, D, q8.data(), &sum);
          for (int d = 0; d < D; ++d) q_used[d] = static_cast<float>(q8[d]) * qscale;
        }
        check_head(s, b, q_used.data(), h, pos, scale, out.data() + (t * H + h) * D, &worst_deq,
                   &worst_ratio);
        if (HasFatalFailure()) return;
      }
    }
  }
  std::ostringstream worst;
  worst << std::scientific << worst_deq << " abs vs dequantized, " << worst_ratio
        << " of the bound vs f32";
  RecordProperty("worst_error", worst.str());

  // Decode: the last query of each request, batched and alone, equals prefill bit for bit.
  std::vector<float> qd(B * H * D), dec(B * H * D, NAN);
  for (int64_t b = 0; b < B; ++b) {
    std::memcpy(qd.data() + b * H * D, q.data() + (qs[b + 1] - 1) * H * D, H * D * sizeof(float));
  }
  decode_attention(pool, s.view(), qd.data(), s.seq_lens.data(), B, H, scale, dec.data());
  ThreadPool pool1(1);
  for (int64_t b = 0; b < B; ++b) {
    EXPECT_EQ(0, std::memcmp(dec.data() + b * H * D, out.data() + (qs[b + 1] - 1) * H * D,
                             H * D * sizeof(float)))
        << "decode vs prefill, seq_len " << s.seq_lens[b];
    PagedKv one = s.view();
    one.block_tables += b * s.max_blocks;
    std::vector<float> alone(H * D);
    decode_attention(pool1, one, qd.data() + b * H * D, s.seq_lens.data() + b, 1, H, scale,
                     alone.data());
    EXPECT_EQ(0, std::memcmp(alone.data(), dec.data() + b * H * D, H * D * sizeof(float)))
        << "decode alone vs batched, seq_len " << s.seq_lens[b];
  }
}

std::vector<Int8Grid> int8_grid() {
  std::vector<Int8Grid> g;
  // 64 and 128: the model shapes; 80: 64 + 16 columns; 36: not a multiple of 8 (scalar paths).
  for (int d : {64, 128, 80, 36}) {
    for (int r : {1, 3, 8}) g.push_back({d, r});
  }
  return g;
}

INSTANTIATE_TEST_SUITE_P(Shapes, KvInt8Attention, ::testing::ValuesIn(int8_grid()),
                         [](const auto& info) {
                           return "D" + std::to_string(info.param.head_dim) + "_G" +
                                  std::to_string(info.param.ratio);
                         });

}  // namespace
}  // namespace llmserve::kernels
