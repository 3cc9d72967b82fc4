// Q4_0 / Q4_1 / Q8_0 weights against 8-bit activations (ActQ8) with AVX2 byte dot products.
// Even and odd blocks go to separate accumulators (two independent FMA chains); the order is
// the same for every row count R, so results do not depend on the batch.
#include "kernels/cpu/dot_kernels.h"
#include "kernels/cpu/quantize_activations.h"
#include "kernels/cpu/simd_util.h"
#include "llmserve/kernels/quant_blocks.h"

namespace llmserve::kernels::cpu {
namespace {

inline __m256i load_qs(const ActQ8& a) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs));
}

// Per weight type: the block's unpacked quants, scale and min; the integer dot with one
// activation block.
struct Q4_0Traits {
  using Block = BlockQ4_0;
  static constexpr bool kHasMin = false;
  static __m256i quants(const Block& b) { return unpack_nibbles_16(b.qs); }
  static float min(const Block&) { return 0.0f; }
  static __m256i idot(__m256i wq, __m256i xq) {
    const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(wq, xq),
                                       _mm256_maddubs_epi16(_mm256_set1_epi8(8), xq));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
  }
};
struct Q4_1Traits {
  using Block = BlockQ4_1;
  static constexpr bool kHasMin = true;
  static __m256i quants(const Block& b) { return unpack_nibbles_16(b.qs); }
  static float min(const Block& b) { return half_to_float(b.m); }
  static __m256i idot(__m256i wq, __m256i xq) { return dot_u8_s8(wq, xq); }
};
struct Q8_0Traits {
  using Block = BlockQ8_0;
  static constexpr bool kHasMin = false;
  static __m256i quants(const Block& b) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
  }
  static float min(const Block&) { return 0.0f; }
  static __m256i idot(__m256i wq, __m256i xq) {
    return dot_u8_s8(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(xq, wq));
  }
};

template <typename Tr, int R>
inline void block_step(const typename Tr::Block& wb, const ActQ8* const* xr, int64_t b, __m256* acc,
                       float* mins) {
  const __m256i wq = Tr::quants(wb);
  const float dw = half_to_float(wb.d);
  for (int r = 0; r < R; ++r) {
    const ActQ8& a = xr[r][b];
    const __m256i p = Tr::idot(wq, load_qs(a));
    acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * a.d), _mm256_cvtepi32_ps(p), acc[r]);
    if constexpr (Tr::kHasMin) mins[r] += Tr::min(wb) * a.ds;
  }
}

template <typename Tr, int R>
void rows(const typename Tr::Block* w, const void* x, size_t xs, int64_t nb, float* out,
          int64_t os) {
  __m256 acc0[R], acc1[R];
  float min0[R], min1[R];
  const ActQ8* xr[R];
  for (int r = 0; r < R; ++r) {
    acc0[r] = acc1[r] = _mm256_setzero_ps();
    min0[r] = min1[r] = 0.0f;
    xr[r] = reinterpret_cast<const ActQ8*>(static_cast<const uint8_t*>(x) + r * xs);
  }
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    block_step<Tr, R>(w[b], xr, b, acc0, min0);
    block_step<Tr, R>(w[b + 1], xr, b + 1, acc1, min1);
  }
  if (b < nb) block_step<Tr, R>(w[b], xr, b, acc0, min0);
  for (int r = 0; r < R; ++r) {
    out[r * os] = hsum(_mm256_add_ps(acc0[r], acc1[r])) + (min0[r] + min1[r]);
  }
}

template <typename Tr>
void dispatch(const void* w, const void* x, size_t xs, int R, int64_t K, float* out, int64_t os) {
  const auto* wb = static_cast<const typename Tr::Block*>(w);
  const int64_t nb = K / kQK;
  switch (R) {
    case 1:
      rows<Tr, 1>(wb, x, xs, nb, out, os);
      break;
    case 2:
      rows<Tr, 2>(wb, x, xs, nb, out, os);
      break;
    case 3:
      rows<Tr, 3>(wb, x, xs, nb, out, os);
      break;
    default:
      rows<Tr, 4>(wb, x, xs, nb, out, os);
      break;
  }
}

}  // namespace

void dot_rows_q4_0(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                   int64_t os) {
  dispatch<Q4_0Traits>(w, x, xs, R, K, out, os);
}
void dot_rows_q4_1(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                   int64_t os) {
  dispatch<Q4_1Traits>(w, x, xs, R, K, out, os);
}
void dot_rows_q8_0(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                   int64_t os) {
  dispatch<Q8_0Traits>(w, x, xs, R, K, out, os);
}

}  // namespace llmserve::kernels::cpu
