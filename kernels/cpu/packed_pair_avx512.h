// Internal: the 512-bit block-pair helpers shared by the AVX-512 VNNI kernels
// (packed_gemm_avx512_vnni.cpp, packed_gemm_avx512_wide.cpp). A vector holds two group blocks: lane
// 2j is block b, row j; lane 2j + 1 is block b + 1, row j; activations come re-laid by
// pair_act_blocks. Include only from files built with the AVX-512 VNNI flags (the unnamed
// namespace gives each its own copy).
#pragma once

#include "kernels/cpu/avx512_intrinsics.h"

#include <cstdint>
#include <cstring>

#include "kernels/cpu/packed_layout.h"
#include "kernels/cpu/quantize_activations.h"

#include "kernels/cpu/packed_gemm_q6_k.h"

namespace llmserve::kernels::cpu {
namespace {

struct Avx512Vnni {
  using Acc4 = __m256i;
  static constexpr bool kAcc16 = false;
  static constexpr int kQ6MaxRows = 8, kQ2MaxRows = 8, kQ6MaxTokens = 4;
  static __m256i zero4() { return _mm256_setzero_si256(); }
  static __m256i dot_u4(__m256i s, __m256i w, __m256i x) { return _mm256_dpbusd_epi32(s, w, x); }
  static __m256i sum4(__m256i s) { return s; }
  static __m256i dot_s8(__m256i s, __m256i aw, __m256i xs) {
    return _mm256_dpbusd_epi32(s, aw, xs);
  }
  static __m256i fifth_bits(uint32_t m) { return _mm256_maskz_mov_epi8(m, _mm256_set1_epi8(0x10)); }
};

inline __m512i alternate_idx() {
  return _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
}

// Lanes 2j = a[j], 2j + 1 = b[j] for two 8-lane (32-byte) vectors.
inline __m512i alternate(const void* a, const void* b) {
  const __m256i va = _mm256_loadu_si256(static_cast<const __m256i*>(a));
  const __m256i vb = _mm256_loadu_si256(static_cast<const __m256i*>(b));
  return _mm512_permutex2var_epi32(_mm512_castsi256_si512(va), alternate_idx(),
                                   _mm512_castsi256_si512(vb));
}
inline __m512i alternate(__m256i a, __m256i b) {
  return _mm512_permutex2var_epi32(_mm512_castsi256_si512(a), alternate_idx(),
                                   _mm512_castsi256_si512(b));
}
inline __m512 alternate(__m256 a, __m256 b) {
  return _mm512_permutex2var_ps(_mm512_castps256_ps512(a), alternate_idx(),
                                _mm512_castps256_ps512(b));
}

inline __m512i bcast8(const int8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return _mm512_set1_epi64(v);
}
inline __m512 bcast_pair(const float* p) {
  double v;
  std::memcpy(&v, p, 8);
  return _mm512_castpd_ps(_mm512_set1_pd(v));
}

// With nb odd, the last block joins the even chains: they are taken out of the even lanes, the
// 256-bit kernels' block step (the same float operations) runs on them, and they go back.
template <int R, typename Block>
inline void last_block_into_even_lanes(__m512* acc, Block&& block) {
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  __m256 chain[R];
  for (int r = 0; r < R; ++r) {
    chain[r] = _mm512_castps512_ps256(_mm512_permutexvar_ps(evens, acc[r]));
  }
  block(chain);
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm512_mask_mov_ps(acc[r], 0x5555, alternate(chain[r], chain[r]));
  }
}

// y row r, lane j = even chain + odd chain (lanes 2j, 2j + 1 of acc[r]).
template <int R>
inline void store_pair_sums(const __m512* acc, float* y, int64_t ys, int valid) {
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  __m256 v[R];
  for (int r = 0; r < R; ++r) {
    const __m512 sum = _mm512_add_ps(acc[r], _mm512_permute_ps(acc[r], 0xB1));
    v[r] = _mm512_castps512_ps256(_mm512_permutexvar_ps(evens, sum));
  }
  store_results<R>(v, y, ys, valid);
}

// The 512-bit form of packed_gemm_impl.h's combine_x2: s_main * 256 + s_res.
inline __m512i combine_x2(__m512i s_main, __m512i s_res) {
  return _mm512_add_epi32(_mm512_slli_epi32(s_main, 8), s_res);
}

template <int W, int N>
__attribute__((always_inline)) inline void zero(__m512 (&acc)[W][N]) {
  for (int w = 0; w < W; ++w)
    for (int i = 0; i < N; ++i) acc[w][i] = _mm512_setzero_ps();
}

// Output rows of group w when the call covers `valid` rows in all.
inline int valid_rows(int valid, int w) {
  return valid - kGroupRows * w < kGroupRows ? valid - kGroupRows * w : kGroupRows;
}

// The W groups' results to y: with nb odd, last_block(w, chain) first adds each group's last block
// (the 256-bit step) into the even chains.
template <int W, int N, typename LastBlock>
__attribute__((always_inline)) inline void finish_groups(__m512 (&acc)[W][N], int64_t nb, float* y,
                                                         int64_t ys, int valid,
                                                         LastBlock&& last_block) {
  for (int w = 0; w < W; ++w) {
    if (nb % 2 != 0) {
      last_block_into_even_lanes<N>(acc[w], [&](__m256* chain) { last_block(w, chain); });
    }
    store_pair_sums<N>(acc[w], y + kGroupRows * w, ys, valid_rows(valid, w));
  }
}

// Weights of block pair p (blocks 2p, 2p + 1) of W consecutive groups of nb blocks each.
template <int W, typename P>
__attribute__((always_inline)) inline void prefetch_pair(const P* g, int64_t nb, int64_t p,
                                                         unsigned flags) {
  for (int w = 0; w < W && (flags & kPrefetchWeights) != 0; ++w) {
    prefetch_block(g, w * nb + 2 * p);
    prefetch_block(g, w * nb + 2 * p + 1);
  }
}

// Chunk c of the pair's 4-bit quants: low and high nibbles as bytes (with Q5_K's 5th bits).
template <int W, typename P>
__attribute__((always_inline)) inline void q4_pair_chunk(const P* g, int64_t nb, int64_t p, int c,
                                                         __m512i* wl, __m512i* wh) {
  const __m512i lo = _mm512_set1_epi8(0x0F);
  for (int w = 0; w < W; ++w) {
    const int64_t i0 = w * nb + 2 * p, i1 = i0 + 1;
    const __m512i v = alternate(q4_quants(g, i0) + 32 * c, q4_quants(g, i1) + 32 * c);
    wl[w] = _mm512_and_si512(v, lo);
    wh[w] = _mm512_and_si512(_mm512_srli_epi16(v, 4), lo);
    if constexpr (kHasFifthBits<P>) {
      const uint32_t* m0 = q5_fifth_bits(g, i0) + 2 * c;
      const uint32_t* m1 = q5_fifth_bits(g, i1) + 2 * c;
      wl[w] = _mm512_or_si512(
          wl[w], alternate(Avx512Vnni::fifth_bits(m0[0]), Avx512Vnni::fifth_bits(m1[0])));
      wh[w] = _mm512_or_si512(
          wh[w], alternate(Avx512Vnni::fifth_bits(m0[1]), Avx512Vnni::fifth_bits(m1[1])));
    }
  }
}

// s[w][i] += chunk c's products of row quants q (block pair layout) with W weight vectors.
template <int W, int N>
__attribute__((always_inline)) inline void q4_pair_dot(__m512i (&s)[W][N], int i, const __m512i* wl,
                                                       const __m512i* wh, const int8_t* q, int c) {
  const __m512i xl = bcast8(q + 8 * c), xh = bcast8(q + 32 + 8 * c);
  for (int w = 0; w < W; ++w) {
    s[w][i] = _mm512_dpbusd_epi32(s[w][i], wl[w], xl);
    s[w][i] = _mm512_dpbusd_epi32(s[w][i], wh[w], xh);
  }
}

// The pair's scales and min terms (x = dw * q + mw), lanes alternating as the quants.
template <int W, typename P>
__attribute__((always_inline)) inline void q4_pair_scales(const P* g, int64_t nb, int64_t p,
                                                          __m512* dw, __m512* mw) {
  for (int w = 0; w < W; ++w) {
    __m256 dw0, mw0, dw1, mw1;
    q4_scales(g, w * nb + 2 * p, dw0, mw0);
    q4_scales(g, w * nb + 2 * p + 1, dw1, mw1);
    dw[w] = alternate(dw0, dw1);
    mw[w] = alternate(mw0, mw1);
  }
}

// Chunk c of the pair's 8-bit quants as unsigned bytes (w + 128).
template <int W>
__attribute__((always_inline)) inline void q8_0_pair_chunk(const PackQ8_0x8* g, int64_t nb,
                                                           int64_t p, int c, __m512i* wv) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int w = 0; w < W; ++w) {
    wv[w] = _mm512_xor_si512(
        alternate(g[w * nb + 2 * p].qs + 32 * c, g[w * nb + 2 * p + 1].qs + 32 * c), flip);
  }
}

template <int W>
__attribute__((always_inline)) inline void q8_0_pair_scales(const PackQ8_0x8* g, int64_t nb,
                                                            int64_t p, __m512* dw) {
  for (int w = 0; w < W; ++w) {
    dw[w] = alternate(load_halves(g[w * nb + 2 * p].d), load_halves(g[w * nb + 2 * p + 1].d));
  }
}

// Q6_K or Q2_K block pair i0, i0 + 1 (i0 even, lanes alternating as the Q4 pair kernels'): the
// scales of q6_scales and the quants of the four chunks' low and high nibble lanes as bytes.
struct Q6PairWeights {
  __m512i wl[4], wh[4];
  __m512i pairs;
  __m512 lo, hi, corr;
};
template <typename P>
__attribute__((always_inline)) inline Q6PairWeights q6_pair_weights(const P* g, int64_t i0) {
  const P& s = g[i0 / kSubBlocks];
  const int64_t j = i0 % kSubBlocks;  // even: both blocks in one super-block
  Q6PairWeights w;
  const __m512i lo = _mm512_set1_epi8(0x0F), m = _mm512_set1_epi8(0x30);
  const __m512i hl = alternate(load_qh(s, j, 0), load_qh(s, j + 1, 0));
  const __m512i hh = alternate(load_qh(s, j, 1), load_qh(s, j + 1, 1));
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512i v = alternate(s.qs[j] + 32 * c, s.qs[j + 1] + 32 * c);
    const int left = 4 - 2 * c;  // bits 2c, 2c + 1 to 4, 5
    auto high = [&](__m512i h) {
      return _mm512_and_si512(left >= 0 ? _mm512_slli_epi16(h, static_cast<unsigned>(left))
                                        : _mm512_srli_epi16(h, static_cast<unsigned>(-left)),
                              m);
    };
    if constexpr (kHasHighBits<P>) {
      w.wl[c] = _mm512_ternarylogic_epi32(lo, v, high(hl), 0xCA);  // lo ? v : high
      w.wh[c] = _mm512_ternarylogic_epi32(lo, _mm512_srli_epi16(v, 4), high(hh), 0xCA);
    } else {
      w.wl[c] = _mm512_and_si512(v, lo);
      w.wh[c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), lo);
    }
  }
  const Q6Scales a = q6_scales(s, j), b = q6_scales(s, j + 1);
  w.lo = alternate(a.lo, b.lo);
  w.hi = alternate(a.hi, b.hi);
  if constexpr (kHasHighBits<P>) {
    w.pairs = _mm512_setzero_si512();  // Q6_K: no min term
    w.corr = _mm512_setzero_ps();
  } else {
    w.pairs = alternate(a.pairs, b.pairs);
    w.corr = alternate(a.corr, b.corr);
  }
  return w;
}

// q6_float_step's operations on a block pair's lanes (corr: Q2_K's min term).
template <typename P>
__attribute__((always_inline)) inline __m512 q6_pair_float_step(const Q6PairWeights& w,
                                                                __m512i s_lo, __m512i s_hi,
                                                                __m512i corr, __m512 dx,
                                                                __m512 chain) {
  if constexpr (kHasHighBits<P>) {
    __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(s_lo), w.lo);
    t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s_hi), w.hi, t);
    return _mm512_fmadd_ps(t, dx, chain);
  } else {
    chain = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s_lo), _mm512_mul_ps(w.lo, dx), chain);
    chain = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s_hi), _mm512_mul_ps(w.hi, dx), chain);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(corr), _mm512_mul_ps(w.corr, dx), chain);
  }
}

// One token's integer sums over the pair (rows[0]: its row, or with X2 its main row, rows[1] the
// residual) and its float steps into chain, as q6_block / q6_block_x2: Q6_K's sums start from -32
// times the half sums (one vpmaddwd each), Q2_K's min term is a third step.
template <typename P, bool X2>
__attribute__((always_inline)) inline __m512 q6_pair_token(const Q6PairWeights& w,
                                                           const ActQ8Pair* const* rows,
                                                           __m512 chain) {
  constexpr int kRows = X2 ? 2 : 1;
  const __m512i lo_start = _mm512_set1_epi32(0x0000FFE0), hi_start = _mm512_set1_epi32(-0x200000);
  __m512i sl[kRows], sh[kRows], corr[kRows];
  for (int r = 0; r < kRows; ++r) {
    const int8_t* q = rows[r]->qs;
    const __m512i half_sums = bcast8(reinterpret_cast<const int8_t*>(rows[r]->ds));
    corr[r] = _mm512_setzero_si512();
    if constexpr (kHasHighBits<P>) {
      sl[r] = _mm512_madd_epi16(half_sums, lo_start);  // -32 * S_lo
      sh[r] = _mm512_madd_epi16(half_sums, hi_start);  // -32 * S_hi
    } else {
      sl[r] = sh[r] = _mm512_setzero_si512();
      corr[r] = _mm512_madd_epi16(w.pairs, half_sums);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      sl[r] = _mm512_dpbusd_epi32(sl[r], w.wl[c], bcast8(q + 8 * c));
      sh[r] = _mm512_dpbusd_epi32(sh[r], w.wh[c], bcast8(q + 32 + 8 * c));
    }
  }
  __m512i s_lo = sl[0], s_hi = sh[0];
  if constexpr (X2) {
    s_lo = combine_x2(s_lo, sl[1]);
    s_hi = combine_x2(s_hi, sh[1]);
  }
  return q6_pair_float_step<P>(w, s_lo, s_hi, X2 ? combine_x2(corr[0], corr[kRows - 1]) : corr[0],
                               bcast_pair(rows[kRows - 1]->d), chain);
}

}  // namespace
}  // namespace llmserve::kernels::cpu
