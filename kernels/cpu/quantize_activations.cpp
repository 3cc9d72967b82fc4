#include "kernels/cpu/quantize_activations.h"

#include <cstring>

#include <immintrin.h>

namespace llmserve::kernels::cpu {
namespace {

// Max |x| over n (multiple of 8) floats.
float abs_max(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8)
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

// Rounds n (multiple of 32) values x * inv to int8 (nearest even, clamped to [-127, 127]) into
// q; returns sum of q.
int32_t quantize_block(const float* x, int n, float inv, int8_t* q) {
  const __m256 vinv = _mm256_set1_ps(inv);
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  auto round8 = [&](const float* p) {
    const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p), vinv));
    return _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
  };
  __m256i total = _mm256_setzero_si256();
  for (int i = 0; i < n; i += 32) {
    const __m256i a = round8(x + i), b = round8(x + i + 8);
    const __m256i c = round8(x + i + 16), d = round8(x + i + 24);
    total =
        _mm256_add_epi32(total, _mm256_add_epi32(_mm256_add_epi32(a, b), _mm256_add_epi32(c, d)));
    __m256i ab = _mm256_packs_epi32(a, b);
    __m256i cd = _mm256_packs_epi32(c, d);
    __m256i abcd = _mm256_packs_epi16(ab, cd);
    // packs interleaves 128-bit lanes: restore element order.
    abcd = _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), abcd);
  }
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
  s = _mm_hadd_epi32(s, s);
  s = _mm_hadd_epi32(s, s);
  return _mm_cvtsi128_si32(s);
}

void quantize_block_q8(const float* xb, ActQ8& out) {
  const float d = abs_max(xb, kQK) / 127.0f;
  out.d = d;
  out.ds = d * static_cast<float>(quantize_block(xb, kQK, d > 0.0f ? 1.0f / d : 0.0f, out.qs));
}

void quantize_block_q8k(const float* xb, BlockQ8_K& out) {
  const float d = abs_max(xb, kQKK) / 127.0f;
  out.d = d;
  quantize_block(xb, kQKK, d > 0.0f ? 1.0f / d : 0.0f, out.qs);
  for (int j = 0; j < kQKK / 16; ++j) {
    int s = 0;
    for (int i = 0; i < 16; ++i) s += out.qs[j * 16 + i];
    out.bsums[j] = static_cast<int16_t>(s);
  }
}

// r[i] = x[i] - d * q[i] over n (multiple of 8) elements.
void residual(const float* x, float d, const int8_t* q, int n, float* r) {
  const __m256 vd = _mm256_set1_ps(d);
  for (int i = 0; i < n; i += 8) {
    const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i));
    const __m256 qf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
    _mm256_storeu_ps(r + i, _mm256_fnmadd_ps(vd, qf, _mm256_loadu_ps(x + i)));
  }
}

}  // namespace

void quantize_row_act_q8(const float* x, int64_t k, ActQ8* out) {
  for (int64_t b = 0; b < k / kQK; ++b) quantize_block_q8(x + b * kQK, out[b]);
}

void quantize_row_act_q8k(const float* x, int64_t k, BlockQ8_K* out) {
  for (int64_t b = 0; b < k / kQKK; ++b) quantize_block_q8k(x + b * kQKK, out[b]);
}

void quantize_row_act_q8x2(const float* x, int64_t k, ActQ8* main, ActQ8* res) {
  alignas(32) float r[kQK];
  for (int64_t b = 0; b < k / kQK; ++b) {
    const float* xb = x + b * kQK;
    quantize_block_q8(xb, main[b]);
    residual(xb, main[b].d, main[b].qs, kQK, r);
    const float dr = main[b].d * (1.0f / kQ8x2ResidualRatio);
    res[b].d = dr;
    const int32_t sum = quantize_block(r, kQK, dr > 0.0f ? 1.0f / dr : 0.0f, res[b].qs);
    res[b].ds = dr * static_cast<float>(sum);
  }
}

void quantize_row_act_q8kx2(const float* x, int64_t k, BlockQ8_K* main, BlockQ8_K* res) {
  alignas(32) float r[kQKK];
  for (int64_t b = 0; b < k / kQKK; ++b) {
    const float* xb = x + b * kQKK;
    quantize_block_q8k(xb, main[b]);
    residual(xb, main[b].d, main[b].qs, kQKK, r);
    quantize_block_q8k(r, res[b]);
  }
}

namespace {

ActQ8Pair pair_of(const ActQ8& a, const ActQ8& b, bool q8_0_correction) {
  ActQ8Pair out;
  out.d[0] = a.d;
  out.d[1] = b.d;
  if (q8_0_correction) {
    int32_t sa = 0, sb = 0;
    for (int i = 0; i < kQK; ++i) {
      sa += a.qs[i];
      sb += b.qs[i];
    }
    out.q8_0_correction[0] = -128 * sa;
    out.q8_0_correction[1] = -128 * sb;
  } else {
    out.ds[0] = a.ds;
    out.ds[1] = b.ds;
  }
  // 4-byte groups alternating: unpack interleaves them within 128-bit lanes, permute orders lanes.
  static_assert(kQK == 32);
  const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs));
  const __m256i qb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
  const __m256i lo = _mm256_unpacklo_epi32(qa, qb), hi = _mm256_unpackhi_epi32(qa, qb);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs), _mm256_permute2x128_si256(lo, hi, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs + 32),
                      _mm256_permute2x128_si256(lo, hi, 0x31));
  return out;
}

}  // namespace

void pair_act_blocks(ActQ8* x, int64_t rows, int64_t nb, bool q8_0_correction) {
  for (int64_t r = 0; r < rows; ++r) {
    ActQ8* row = x + r * nb;
    for (int64_t p = 0; p + 1 < nb; p += 2) {
      const ActQ8Pair out = pair_of(row[p], row[p + 1], q8_0_correction);
      std::memcpy(static_cast<void*>(row + p), &out, sizeof(out));
    }
  }
}

void pair_act_row_to(const ActQ8* row, int64_t nb, ActQ8Pair* dst, int64_t stride,
                     bool q8_0_correction) {
  for (int64_t p = 0; p + 1 < nb; p += 2) {
    dst[p / 2 * stride] = pair_of(row[p], row[p + 1], q8_0_correction);
  }
}

namespace {

int32_t half_sum(const ActQ8& a, int h) {
  int16_t sums[2];
  std::memcpy(sums, &a.ds, sizeof(sums));
  return sums[h];
}

ActQ6WidePair q6_wide_pair(const ActQ8& a, const ActQ8& b) {
  const ActQ8Pair pair = pair_of(a, b, false);
  ActQ6WidePair out;
  std::memcpy(out.d, pair.d, sizeof(out.d));
  std::memcpy(out.qs, pair.qs, sizeof(out.qs));
  return out;
}

}  // namespace

void q6_row_to_wide(const ActQ8* row, int64_t nb, ActQ6WidePair* dst, int64_t stride) {
  for (int64_t p = 0; p + 1 < nb; p += 2) {
    ActQ6WidePair out = q6_wide_pair(row[p], row[p + 1]);
    for (int i = 0; i < 2; ++i) {
      out.start_lo[i] = -32 * half_sum(row[p + i], 0);
      out.start_hi[i] = -32 * half_sum(row[p + i], 1);
    }
    dst[p / 2 * stride] = out;
  }
}

void q6_token_to_wide(const ActQ8* main, const ActQ8* residual, int64_t nb, ActQ6WidePair* dst,
                      int64_t stride) {
  for (int64_t p = 0; p + 1 < nb; p += 2) {
    ActQ6WidePair m = q6_wide_pair(main[p], main[p + 1]);
    ActQ6WidePair r = q6_wide_pair(residual[p], residual[p + 1]);
    auto start = [&](int i, int h) {
      return -32 * (kQ8x2ResidualRatio * half_sum(main[p + i], h) + half_sum(residual[p + i], h));
    };
    for (int i = 0; i < 2; ++i) {
      m.start_lo[i] = m.start_hi[i] = 0;
      r.start_lo[i] = start(i, 0);
      r.start_hi[i] = start(i, 1);
    }
    dst[p / 2 * stride] = m;
    dst[p / 2 * stride + 1] = r;
  }
}

void store_half_sums(ActQ8* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    int16_t sums[2] = {0, 0};
    for (int h = 0; h < 2; ++h) {
      int s = 0;
      for (int k = 0; k < kQK / 2; ++k) s += x[i].qs[16 * h + k];
      sums[h] = static_cast<int16_t>(s);
    }
    std::memcpy(&x[i].ds, sums, sizeof(sums));
  }
}

}  // namespace llmserve::kernels::cpu
