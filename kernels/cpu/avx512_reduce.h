// Internal: the transposing reduction shared by the AVX-512 attention files (built with AVX-512
// flags only).
#pragma once

#include "kernels/cpu/avx512_intrinsics.h"

namespace llmserve::kernels::cpu {

// Lane i of the result = the sum of the 16 lanes of a[i], i < 8.
inline __m256 reduce8(const __m512* a) {
  __m512 b[4];
  for (int i = 0; i < 4; ++i) {
    b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]),
                         _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  }
  __m512 c[2];
  for (int i = 0; i < 2; ++i) {
    const __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  // c[i]: keys 4i..4i+3 in each 128-bit lane, partial over that lane's columns.
  const __m512 g =
      _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], 0x44), _mm512_shuffle_f32x4(c[0], c[1], 0xEE));
  const __m512 h = _mm512_add_ps(g, _mm512_shuffle_f32x4(g, g, 0xB1));
  return _mm512_castps512_ps256(_mm512_shuffle_f32x4(h, h, 0x08));
}

}  // namespace llmserve::kernels::cpu
