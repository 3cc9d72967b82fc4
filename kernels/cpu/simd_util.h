// Internal AVX2 helpers shared by the CPU kernels.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <initializer_list>

namespace llmserve::kernels::cpu {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float half_to_float(uint16_t h) {
  return _cvtsh_ss(h);
}

// 16 packed bytes of nibbles -> 32 bytes: low nibbles first (elements 0..15), then high.
inline __m256i unpack_nibbles_16(const uint8_t* p) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256i v = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

// Sums of products of unsigned bytes a with signed bytes b into 8 int32 lanes.
inline __m256i dot_u8_s8(__m256i a, __m256i b) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1));
}

// e^x lane by lane for a vector type given its operations V (Avx2Floats shows them; pow2(n) =
// 2^n for integral n in [-126, 127] from the exponent bits). x is clamped to [-87.3, 88.3] (so -inf
// gives ~1e-38, not 0): x = n ln2 + r with |r| <= ln2/2 (ln2 split in two for exactness), e^r by a
// degree-6 polynomial. Relative error about 2 ulp; every width gives the same bits per lane.
template <typename V>
inline typename V::F exp_lanes(typename V::F x) {
  using F = typename V::F;
  x = V::min(V::max(x, V::set1(-87.3f)), V::set1(88.3f));
  const F n = V::round_nearest(V::mul(x, V::set1(1.44269504088896341f)));
  F r = V::fnmadd(n, V::set1(0.693145751953125f), x);
  r = V::fnmadd(n, V::set1(1.428606765330187045e-06f), r);
  F p = V::set1(1.0f / 720);
  for (const float c : {1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f})
    p = V::fmadd(p, r, V::set1(c));
  return V::mul(p, V::pow2(n));
}

// Float-vector operations for the width-generic helpers (exp_lanes, softmax_lanes).
struct Avx2Floats {
  using F = __m256;
  static constexpr int kLanes = 8;
  static F load(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, F v) { _mm256_store_ps(p, v); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F round_nearest(F a) {
    return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  static F pow2(F n) {
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  // Lanes [0, count) of a, the rest zero.
  static F keep_first(F a, int count) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(count), idx)));
  }
  static float reduce_max(F v) {
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
  }
  static float reduce_add(F v) { return hsum(v); }
};

// e^x for 8 floats (exp_lanes).
inline __m256 exp_ps(__m256 x) {
  return exp_lanes<Avx2Floats>(x);
}

// x[i] = fn(x[i]) for n floats, 8 lanes at a time; the tail goes through the same lanes (padded),
// so an element's result does not depend on its position.
template <typename Fn>
inline void map_lanes8(float* x, int64_t n, Fn fn) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, fn(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float t[8] = {};
    for (int64_t j = i; j < n; ++j) t[j - i] = x[j];
    _mm256_store_ps(t, fn(_mm256_load_ps(t)));
    for (int64_t j = i; j < n; ++j) x[j] = t[j - i];
  }
}

// f32 dot of n floats (any n): 8-wide FMA in order, then a scalar tail.
inline float dot_f32(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace llmserve::kernels::cpu
