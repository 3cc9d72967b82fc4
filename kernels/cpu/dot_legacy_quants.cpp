// Q4_0 / Q4_1 / Q8_0 weights against 8-bit activations (ActQ8) with AVX2 byte dot products.
#include "kernels/cpu/dot_kernels.h"
#include "kernels/cpu/quantize_activations.h"
#include "kernels/cpu/simd_util.h"
#include "llmserve/kernels/quant_blocks.h"

namespace llmserve::kernels::cpu {
namespace {

inline const ActQ8* act_row(const void* x, size_t stride, int r) {
  return reinterpret_cast<const ActQ8*>(static_cast<const uint8_t*>(x) + r * stride);
}
inline __m256i load_qs(const ActQ8& a) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs));
}

template <int R>
void q4_0_rows(const BlockQ4_0* w, const void* x, size_t xs, int64_t nb, float* out, int64_t os) {
  __m256 acc[R];
  const ActQ8* xr[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    xr[r] = act_row(x, xs, r);
  }
  const __m256i eight = _mm256_set1_epi8(8);
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i wq = unpack_nibbles_16(w[b].qs);
    const float dw = half_to_float(w[b].d);
    for (int r = 0; r < R; ++r) {
      const __m256i xq = load_qs(xr[r][b]);
      const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(wq, xq),
                                           _mm256_maddubs_epi16(eight, xq));
      const __m256i p = _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * xr[r][b].d), _mm256_cvtepi32_ps(p), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r * os] = hsum(acc[r]);
}

template <int R>
void q4_1_rows(const BlockQ4_1* w, const void* x, size_t xs, int64_t nb, float* out, int64_t os) {
  __m256 acc[R];
  float mins[R];
  const ActQ8* xr[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    mins[r] = 0.0f;
    xr[r] = act_row(x, xs, r);
  }
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i wq = unpack_nibbles_16(w[b].qs);
    const float dw = half_to_float(w[b].d);
    const float mw = half_to_float(w[b].m);
    for (int r = 0; r < R; ++r) {
      const ActQ8& a = xr[r][b];
      const __m256i p = dot_u8_s8(wq, load_qs(a));
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * a.d), _mm256_cvtepi32_ps(p), acc[r]);
      mins[r] += mw * (a.d * static_cast<float>(a.sum));
    }
  }
  for (int r = 0; r < R; ++r) out[r * os] = hsum(acc[r]) + mins[r];
}

template <int R>
void q8_0_rows(const BlockQ8_0* w, const void* x, size_t xs, int64_t nb, float* out, int64_t os) {
  __m256 acc[R];
  const ActQ8* xr[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    xr[r] = act_row(x, xs, r);
  }
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs));
    const __m256i wabs = _mm256_sign_epi8(wq, wq);
    const float dw = half_to_float(w[b].d);
    for (int r = 0; r < R; ++r) {
      const __m256i xs8 = _mm256_sign_epi8(load_qs(xr[r][b]), wq);
      const __m256i p = dot_u8_s8(wabs, xs8);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * xr[r][b].d), _mm256_cvtepi32_ps(p), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r * os] = hsum(acc[r]);
}

template <typename Block, void (*F1)(const Block*, const void*, size_t, int64_t, float*, int64_t),
          void (*F2)(const Block*, const void*, size_t, int64_t, float*, int64_t),
          void (*F3)(const Block*, const void*, size_t, int64_t, float*, int64_t),
          void (*F4)(const Block*, const void*, size_t, int64_t, float*, int64_t)>
void dispatch(const void* w, const void* x, size_t xs, int R, int64_t K, float* out, int64_t os) {
  const auto* wb = static_cast<const Block*>(w);
  const int64_t nb = K / kQK;
  switch (R) {
    case 1: F1(wb, x, xs, nb, out, os); break;
    case 2: F2(wb, x, xs, nb, out, os); break;
    case 3: F3(wb, x, xs, nb, out, os); break;
    default: F4(wb, x, xs, nb, out, os); break;
  }
}

}  // namespace

void dot_rows_q4_0(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                   int64_t os) {
  dispatch<BlockQ4_0, q4_0_rows<1>, q4_0_rows<2>, q4_0_rows<3>, q4_0_rows<4>>(w, x, xs, R, K, out,
                                                                             os);
}
void dot_rows_q4_1(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                   int64_t os) {
  dispatch<BlockQ4_1, q4_1_rows<1>, q4_1_rows<2>, q4_1_rows<3>, q4_1_rows<4>>(w, x, xs, R, K, out,
                                                                             os);
}
void dot_rows_q8_0(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                   int64_t os) {
  dispatch<BlockQ8_0, q8_0_rows<1>, q8_0_rows<2>, q8_0_rows<3>, q8_0_rows<4>>(w, x, xs, R, K, out,
                                                                             os);
}

}  // namespace llmserve::kernels::cpu
