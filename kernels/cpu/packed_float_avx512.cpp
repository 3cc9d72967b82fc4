// The F16 / BF16 panel micro-kernels on AVX-512F (picked at run time on CPUs that have it):
// 16-float vectors, up to 12 activation rows x 32 weight rows per call (24 accumulators).
#include "kernels/cpu/avx512_intrinsics.h"

#include "kernels/cpu/packed_float_kernels.h"

namespace llmserve::kernels::cpu {
namespace {

struct Avx512 {
  using F = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kMaxRows = 12;
  // One or two rows (decode): 4 panels at once, 8 or 16 accumulators; 3 to 6: two panels.
  static constexpr int units_for(int R) { return R <= 2 ? 4 : R <= 6 ? 2 : 1; }
  static F zero() { return _mm512_setzero_ps(); }
  static F bcast(const float* p) { return _mm512_set1_ps(*p); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void load_bf16_pairs(const uint16_t* p, F& even, F& odd) {
    const __m512i v = _mm512_load_si512(p);
    even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    odd =
        _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  // FP8: one row, 4 units (scales and weights of 8 vectors beside 8 accumulators); 2 to 4 rows,
  // 2 units; more, 1 (at most 24 accumulators + 2 scale + 2 weight vectors).
  static constexpr int fp8_units_for(int R) { return R == 1 ? 4 : R <= 4 ? 2 : 1; }
  static F loadu(const float* p) { return _mm512_loadu_ps(p); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F load_partial(const float* p, int valid) {
    if (valid >= kLanes) return _mm512_loadu_ps(p);
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << valid) - 1), p);
  }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  // 16 e4m3 bytes -> f32 bits: sign-extended to 32 bits, << 20, sign and the 7 value bits kept:
  // the e4m3 value times 2^-120 exactly (subnormals become f32 subnormals).
  static F load_e4m3(const uint8_t* p) {
    const __m512i w = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_slli_epi32(w, 20),
                                                _mm512_set1_epi32(static_cast<int>(0x87f00000u))));
  }
  static void store(float* y, F v, int valid) {
    if (valid >= kLanes) {
      _mm512_storeu_ps(y, v);
    } else {
      _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << valid) - 1), v);
    }
  }
};

}  // namespace

FloatKernels float_kernels_avx512() {
  return make_float_kernels<Avx512>();
}

}  // namespace llmserve::kernels::cpu
