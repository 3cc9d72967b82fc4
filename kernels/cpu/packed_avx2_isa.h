// Internal: the AVX2 policy of packed_gemm_impl.h (vpmaddubsw pairs summed in 16-bit lanes),
// shared by packed_gemm_avx2.cpp and packed_gemm_avx2_unpacked.cpp. Include only from files built
// for AVX2 (the unnamed namespace gives each its own copy).
#pragma once

#include "kernels/cpu/packed_gemm_q6_k.h"

namespace llmserve::kernels::cpu {
namespace {

struct Avx2 {
  using Acc4 = __m256i;
  static constexpr bool kAcc16 = true;
  // Q6_K rows run q6_block_avx2 (one integer sum pair per row); Q2_K's three sums fit 3 rows.
  static constexpr int kQ6MaxRows = 4, kQ2MaxRows = 3, kQ6MaxTokens = 2;
  static __m256i zero4() { return _mm256_setzero_si256(); }
  static __m256i dot_u4(__m256i s, __m256i w, __m256i x) {
    return _mm256_add_epi16(s, _mm256_maddubs_epi16(w, x));
  }
  static __m256i sum4(__m256i s) { return _mm256_madd_epi16(s, _mm256_set1_epi16(1)); }
  static __m256i dot_s8(__m256i s, __m256i aw, __m256i xs) {
    return _mm256_add_epi32(s,
                            _mm256_madd_epi16(_mm256_maddubs_epi16(aw, xs), _mm256_set1_epi16(1)));
  }
  static __m256i fifth_bits(uint32_t m) {
    // Byte i takes mask byte i / 8, then keeps its own bit.
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                            2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(m)), spread);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit),
                            _mm256_set1_epi8(0x10));
  }
};

}  // namespace
}  // namespace llmserve::kernels::cpu
