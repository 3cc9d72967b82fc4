// Q4_K / Q5_K / Q6_K weights against Q8_K activations (per-256 scale, per-16 sums) with AVX2.
#include <cstring>
#include <type_traits>

#include "kernels/cpu/dot_kernels.h"
#include "kernels/cpu/simd_util.h"
#include "llmserve/kernels/quant_blocks.h"

namespace llmserve::kernels::cpu {
namespace {

inline const BlockQ8_K* act_row(const void* x, size_t stride, int r) {
  return reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + r * stride);
}
inline __m256i load32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// The 6-bit scales and mins of a Q4_K block, 8 of each.
void q4_k_scales(const uint8_t* s, uint8_t sc[8], uint8_t mn[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    mn[j] = s[j + 4] & 63;
    sc[j + 4] = (s[j + 8] & 0x0F) | ((s[j] >> 6) << 4);
    mn[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4);
  }
}

// Q4_K, or Q5_K (Block = BlockQ5_K): the same scales and mins, and element 64c + 32h + l
// (h = 0, 1) gains bit 2c + h of qh[l] as its 5th bit (values 0..31: maddubs stays in range).
template <typename Block, int R>
void q45_k_rows(const Block* w, const void* x, size_t xs, int64_t nb, float* out, int64_t os) {
  __m256 acc[R];
  const BlockQ8_K* xr[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    xr[r] = act_row(x, xs, r);
  }
  const __m256i low = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t sc[8], mn[8];
    q4_k_scales(w[b].scales, sc, mn);
    // Each min applies to 32 elements = two 16-sums.
    alignas(32) int16_t mins16[16];
    for (int j = 0; j < 16; ++j) mins16[j] = mn[j / 2];
    const __m256i vmins = _mm256_load_si256(reinterpret_cast<const __m256i*>(mins16));
    __m256i q[8];
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = load32(w[b].qs + 32 * c);
      q[2 * c] = _mm256_and_si256(raw, low);
      q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
    }
    if constexpr (std::is_same_v<Block, BlockQ5_K>) {
      const __m256i hb = load32(w[b].qh);
      const __m256i five = _mm256_set1_epi8(0x10);
      for (int j = 0; j < 8; ++j) {
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << j));
        const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(hb, bit), bit);
        q[j] = _mm256_or_si256(q[j], _mm256_and_si256(set, five));
      }
    }
    const float dw = half_to_float(w[b].d);
    const float mw = half_to_float(w[b].dmin);
    for (int r = 0; r < R; ++r) {
      const BlockQ8_K& a = xr[r][b];
      __m256i sumi = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i p = _mm256_maddubs_epi16(q[j], load32(a.qs + 32 * j));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_set1_epi16(sc[j])));
      }
      const __m256i summ = _mm256_madd_epi16(load32(a.bsums), vmins);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * a.d), _mm256_cvtepi32_ps(sumi), acc[r]);
      acc[r] = _mm256_fnmadd_ps(_mm256_set1_ps(mw * a.d), _mm256_cvtepi32_ps(summ), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r * os] = hsum(acc[r]);
}

template <int R>
void q6_k_rows(const BlockQ6_K* w, const void* x, size_t xs, int64_t nb, float* out, int64_t os) {
  __m256 acc[R];
  const BlockQ8_K* xr[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    xr[r] = act_row(x, xs, r);
  }
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i two = _mm256_set1_epi8(0x30);
  for (int64_t b = 0; b < nb; ++b) {
    // q[j] holds elements 32j..32j+31 as unsigned 0..63; scale pair (2j, 2j+1).
    __m256i q[8];
    __m256i scl[8];
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = w[b].ql + 64 * h;
      const uint8_t* qh = w[b].qh + 32 * h;
      const int8_t* s = w[b].scales + 8 * h;
      const __m256i la = load32(ql), lb = load32(ql + 32), hb = load32(qh);
      q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(la, low),
                                     _mm256_and_si256(_mm256_slli_epi16(hb, 4), two));
      q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(lb, low),
                                     _mm256_and_si256(_mm256_slli_epi16(hb, 2), two));
      q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), low),
                                     _mm256_and_si256(hb, two));
      q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), low),
                                     _mm256_and_si256(_mm256_srli_epi16(hb, 2), two));
      for (int k = 0; k < 4; ++k) {
        scl[4 * h + k] = _mm256_set_m128i(_mm_set1_epi16(s[2 * k + 1]), _mm_set1_epi16(s[2 * k]));
      }
    }
    const __m256i scales16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
    const float dw = half_to_float(w[b].d);
    for (int r = 0; r < R; ++r) {
      const BlockQ8_K& a = xr[r][b];
      __m256i sumi = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i p = _mm256_maddubs_epi16(q[j], load32(a.qs + 32 * j));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scl[j]));
      }
      const __m256i offs = _mm256_madd_epi16(load32(a.bsums), scales16);
      sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(offs, 5));
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * a.d), _mm256_cvtepi32_ps(sumi), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r * os] = hsum(acc[r]);
}

template <typename Block>
void q45_k_dispatch(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                    int64_t os) {
  const auto* wb = static_cast<const Block*>(w);
  const int64_t nb = K / kQKK;
  switch (R) {
    case 1:
      q45_k_rows<Block, 1>(wb, x, xs, nb, out, os);
      break;
    case 2:
      q45_k_rows<Block, 2>(wb, x, xs, nb, out, os);
      break;
    case 3:
      q45_k_rows<Block, 3>(wb, x, xs, nb, out, os);
      break;
    default:
      q45_k_rows<Block, 4>(wb, x, xs, nb, out, os);
      break;
  }
}

}  // namespace

void dot_rows_q4_k(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                   int64_t os) {
  q45_k_dispatch<BlockQ4_K>(w, x, xs, R, K, out, os);
}

void dot_rows_q5_k(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                   int64_t os) {
  q45_k_dispatch<BlockQ5_K>(w, x, xs, R, K, out, os);
}

void dot_rows_q6_k(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                   int64_t os) {
  const auto* wb = static_cast<const BlockQ6_K*>(w);
  const int64_t nb = K / kQKK;
  switch (R) {
    case 1:
      q6_k_rows<1>(wb, x, xs, nb, out, os);
      break;
    case 2:
      q6_k_rows<2>(wb, x, xs, nb, out, os);
      break;
    case 3:
      q6_k_rows<3>(wb, x, xs, nb, out, os);
      break;
    default:
      q6_k_rows<4>(wb, x, xs, nb, out, os);
      break;
  }
}

}  // namespace llmserve::kernels::cpu
