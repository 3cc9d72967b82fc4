// The scores of int8 keys with AVX-512 VNNI (vpdpbusd: u8 x s8 -> s32): a key row k (s8) becomes
// u8 as k + 128 (one xor), so q . (k + 128) - 128 sum(q) = q . k exactly; eight keys' partial
// sums are reduced together, converted to f32 exactly (|q . k| <= 127 * 255 * D < 2^24 for
// D <= 256 ... 512), then scaled. Built with VNNI flags (this file alone, kernels/CMakeLists.txt);
// called only when attention_int8_vnni_available().
#include "kernels/cpu/attention_core.h"
#include "kernels/cpu/avx512_reduce.h"

namespace llmserve::kernels::cpu {
namespace {

template <int G>
void scores(const int8_t* q, const float* q_scale, const int32_t* q_sum, int D,
            const int8_t* const* krows, int n, float scale, const float* ks, float* s,
            int s_stride) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m256 factor[G], offset[G];
  for (int g = 0; g < G; ++g) {
    factor[g] = _mm256_set1_ps(scale * q_scale[g]);
    offset[g] = _mm256_set1_ps(128.0f * static_cast<float>(q_sum[g]));
  }
  for (int j0 = 0; j0 < n; j0 += 8) {
    const int8_t* k[8];
    for (int j = 0; j < 8; ++j) k[j] = krows[j0 + j < n ? j0 + j : n - 1];
    __m512i acc[G][8];
    for (int g = 0; g < G; ++g) {
      for (int j = 0; j < 8; ++j) acc[g][j] = _mm512_setzero_si512();
    }
    for (int d = 0; d < D; d += 64) {
      const __mmask64 m = D - d >= 64 ? ~__mmask64{0} : (__mmask64{1} << (D - d)) - 1;
      __m512i qv[G];
      for (int g = 0; g < G; ++g) qv[g] = _mm512_maskz_loadu_epi8(m, q + g * D + d);
      for (int j = 0; j < 8; ++j) {
        // Masked-off bytes: k + 128 = 128 but q = 0 there, so they add nothing.
        const __m512i ku = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, k[j] + d), flip);
        for (int g = 0; g < G; ++g) acc[g][j] = _mm512_dpbusd_epi32(acc[g][j], ku, qv[g]);
      }
    }
    const __m256 key_scale = _mm256_load_ps(ks + j0);
    for (int g = 0; g < G; ++g) {
      __m512 f[8];
      for (int j = 0; j < 8; ++j) f[j] = _mm512_cvtepi32_ps(acc[g][j]);
      const __m256 dot = _mm256_sub_ps(reduce8(f), offset[g]);
      _mm256_store_ps(s + g * s_stride + j0,
                      _mm256_mul_ps(_mm256_mul_ps(dot, key_scale), factor[g]));
    }
  }
}

}  // namespace

void int8_scores_vnni(const int8_t* q, const float* q_scale, const int32_t* q_sum, int G, int D,
                      const int8_t* const* krows, int n, float scale, const float* ks, float* s,
                      int s_stride) {
  switch (G) {
    case 1:
      scores<1>(q, q_scale, q_sum, D, krows, n, scale, ks, s, s_stride);
      break;
    case 2:
      scores<2>(q, q_scale, q_sum, D, krows, n, scale, ks, s, s_stride);
      break;
    default:
      scores<3>(q, q_scale, q_sum, D, krows, n, scale, ks, s, s_stride);
      break;
  }
}

}  // namespace llmserve::kernels::cpu
