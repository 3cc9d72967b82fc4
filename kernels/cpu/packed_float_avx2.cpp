// The F16 / BF16 panel micro-kernels on AVX2 + F16C + FMA (the baseline): 8-float vectors, up to
// 6 activation rows x 16 weight rows per call (12 of the 16 registers accumulate).
#include "kernels/cpu/packed_float_kernels.h"

namespace llmserve::kernels::cpu {
namespace {

struct Avx2 {
  using F = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kMaxRows = 6;
  // One row (decode): 4 units (2 panels), 8 accumulators; two rows: 2 units.
  static constexpr int units_for(int R) { return R == 1 ? 4 : R == 2 ? 2 : 1; }
  static F zero() { return _mm256_setzero_ps(); }
  static F bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void load_bf16_pairs(const uint16_t* p, F& even, F& odd) {
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
    even = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    odd =
        _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  // FP8: one row, 2 units (4 scale + 4 weight vectors beside 4 accumulators); more rows: 1.
  static constexpr int fp8_units_for(int R) { return R <= 2 ? 2 : 1; }
  static F loadu(const float* p) { return _mm256_loadu_ps(p); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F load_partial(const float* p, int valid) {
    if (valid >= kLanes) return _mm256_loadu_ps(p);
    alignas(32) float t[kLanes] = {};
    for (int j = 0; j < valid; ++j) t[j] = p[j];
    return _mm256_load_ps(t);
  }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  // 8 e4m3 bytes -> f32 bits: sign-extended to 32 bits, << 20, sign and the 7 value bits kept:
  // the e4m3 value times 2^-120 exactly (subnormals become f32 subnormals).
  static F load_e4m3(const uint8_t* p) {
    const __m256i w = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(w, 20),
                                                _mm256_set1_epi32(static_cast<int>(0x87f00000u))));
  }
  static void store(float* y, F v, int valid) {
    if (valid >= kLanes) {
      _mm256_storeu_ps(y, v);
    } else {
      alignas(32) float t[kLanes];
      _mm256_store_ps(t, v);
      for (int j = 0; j < valid; ++j) y[j] = t[j];
    }
  }
};

}  // namespace

FloatKernels float_kernels_avx2() {
  return make_float_kernels<Avx2>();
}

}  // namespace llmserve::kernels::cpu
