// Internal: the register-blocked micro-kernels over packed group blocks, written once against an
// `Isa` policy for the integer dot steps and compiled per instruction set by packed_gemm_*.cpp
// (hence the unnamed namespace: each including file gets its own copy, built with its target).
// Isa provides:
//   Acc4 zero4(); Acc4 dot_u4(Acc4, u4 weights, s8 x); __m256i sum4(Acc4) -- for 4-bit weights
//   kAcc16: Acc4 holds 16-bit sums (kWidenMidBlock)
//   __m256i dot_s8(__m256i acc32, |w| bytes, sign-adjusted x)                -- for 8-bit weights
//   __m256i fifth_bits(uint32_t m): 0x10 in byte i where bit i of m is set     -- for Q5_K
// Every variant gives the exact integer sums, so results match across instruction sets, and each
// activation row follows the same float operations whatever R. With kSumRowPairs the kernels take
// q8x2 tokens (a main and a residual row each) and add the two in integers before the one float
// step per token and block.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cpu/packed_layout.h"
#include "kernels/cpu/quantize_activations.h"

namespace llmserve::kernels::cpu {
namespace {

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Software prefetch of 32-element block i + kPrefetchNear of a group into L1 and of block
// i + kPrefetchFar into L2 (all their cache lines; a K-quant super-block's bytes spread evenly over
// its 8 blocks): the weights stream from DRAM once per call, and the two stages keep more lines in
// flight than the hardware prefetchers do for an 8-row interleaved stream, or than one L1 stage
// does (bench/RESULTS.md, "Real model sizes": decode +3-14 % over one stage 16 blocks ahead).
inline constexpr int kPrefetchNear = 8, kPrefetchFar = 20;
template <typename P>
inline void prefetch_block(const P* g, int64_t i) {
  const char* base = reinterpret_cast<const char*>(g);
  const char* near = base + (i + kPrefetchNear) * kBlockBytes<P>;
  const char* far = base + (i + kPrefetchFar) * kBlockBytes<P>;
  for (size_t off = 0; off < kBlockBytes<P>; off += 64) {
    _mm_prefetch(near + off, _MM_HINT_T0);
    _mm_prefetch(far + off, _MM_HINT_T1);
  }
}

inline __m256 load_halves(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256 load_u8x8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

inline void store_rows(__m256 v, float* y, int valid) {
  if (valid == kGroupRows) {
    _mm256_storeu_ps(y, v);
  } else {
    alignas(32) float t[kGroupRows];
    _mm256_store_ps(t, v);
    for (int j = 0; j < valid; ++j) y[j] = t[j];
  }
}

// Row results v[0..R) to y rows.
template <int R>
inline void store_results(const __m256* v, float* y, int64_t ys, int valid) {
  for (int r = 0; r < R; ++r) store_rows(v[r], y + r * ys, valid);
}

// Block i of a 4-bit (or Q5_K) group: its quants (PackQ4_0x8::qs layout), its scales as
// x = dw * q + mw per row (exact: for the K-quants, f16 d times a 6-bit scale), and for Q5_K the
// 5th-bit masks of its chunks ([c][0] low nibbles, [c][1] high).
template <typename P>
inline const uint8_t* q4_quants(const P* g, int64_t i) {
  if constexpr (kIsSuperPack<P>) {
    return g[i / kSubBlocks].qs[i % kSubBlocks];
  } else {
    return g[i].qs;
  }
}
template <typename P>
inline const uint32_t* q5_fifth_bits(const P* g, int64_t i) {
  return g[i / kSubBlocks].qh[i % kSubBlocks][0];
}
template <typename P>
inline constexpr bool kHasFifthBits = std::is_same_v<P, PackQ5_Kx8>;

template <typename P>
__attribute__((always_inline)) inline void q4_scales(const P* g, int64_t i, __m256& dw,
                                                     __m256& mw) {
  if constexpr (kIsSuperPack<P>) {
    const P& s = g[i / kSubBlocks];
    const int64_t j = i % kSubBlocks;
    dw = _mm256_mul_ps(load_halves(s.d), load_u8x8(s.sc[j]));
    mw = _mm256_mul_ps(_mm256_mul_ps(load_halves(s.dmin), load_u8x8(s.mn[j])),
                       _mm256_set1_ps(-1.0f));  // x = d * sc * q - dmin * mn
  } else if constexpr (std::is_same_v<P, PackQ4_1x8>) {
    dw = load_halves(g[i].d);
    mw = load_halves(g[i].m);  // x = d * q + m
  } else {
    dw = load_halves(g[i].d);
    mw = _mm256_mul_ps(dw, _mm256_set1_ps(-8.0f));  // x = d * (q - 8)
  }
}

// Chunk c of block i's quants: low and high nibbles as bytes (with the 5th bits for Q5_K).
template <typename Isa, typename P>
__attribute__((always_inline)) inline void q4_chunk(const P* g, int64_t i, int c, __m256i& wl,
                                                    __m256i& wh) {
  const __m256i lo = _mm256_set1_epi8(0x0F);
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q4_quants(g, i) + 32 * c));
  wl = _mm256_and_si256(v, lo);
  wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo);
  if constexpr (kHasFifthBits<P>) {
    const uint32_t* m = q5_fifth_bits(g, i) + 2 * c;
    wl = _mm256_or_si256(wl, Isa::fifth_bits(m[0]));
    wh = _mm256_or_si256(wh, Isa::fifth_bits(m[1]));
  }
}

// Isa::Acc4 of 16-bit lanes (AVX2) holds 8 steps of 4-bit products (8 x 2 x 15 x 127 < 2^15) but
// only 4 of Q5_K's 5-bit ones (4 x 2 x 31 x 127 < 2^15): those widen after chunk 1 as well.
template <typename Isa, typename P>
inline constexpr bool kWidenMidBlock = Isa::kAcc16&& kHasFifthBits<P>;

// Moves s's sum into the 32-bit part (after chunk 1 where kWidenMidBlock).
template <typename Isa, typename P>
__attribute__((always_inline)) inline void widen_mid_block(int c, typename Isa::Acc4& s,
                                                           __m256i& part) {
  if constexpr (kWidenMidBlock<Isa, P>) {
    if (c == 1) {
      part = Isa::sum4(s);
      s = Isa::zero4();
    }
  }
}
template <typename Isa, typename P>
__attribute__((always_inline)) inline __m256i block_sum(typename Isa::Acc4 s, __m256i part) {
  if constexpr (kWidenMidBlock<Isa, P>) {
    return _mm256_add_epi32(Isa::sum4(s), part);
  } else {
    return Isa::sum4(s);
  }
}

// R rows against one block whose chunk c load(c, wl, wh) gives and whose scales(dw, mw) gives
// (x = dw * q + mw per row), accumulated into chain[r] as
// chain = fma(float(isum), dw * d_x, chain); chain = fma(mw, ds_x, chain). From the pack in
// q4_block, from a scratch in packed_gemm_avx2_unpacked.cpp.
template <typename Isa, typename P, int R, typename LoadChunk, typename LoadScales>
__attribute__((always_inline)) inline void q4_rows_block(LoadChunk&& load, LoadScales&& scales,
                                                         const ActQ8* x, int64_t nb, int64_t b,
                                                         __m256* chain) {
  typename Isa::Acc4 s[R];
  __m256i part[R];
  for (int r = 0; r < R; ++r) s[r] = Isa::zero4();
  for (int c = 0; c < 4; ++c) {
    __m256i wl, wh;
    load(c, wl, wh);
    for (int r = 0; r < R; ++r) {
      const int8_t* q = x[r * nb + b].qs;
      s[r] = Isa::dot_u4(s[r], wl, bcast4(q + 4 * c));
      s[r] = Isa::dot_u4(s[r], wh, bcast4(q + 16 + 4 * c));
      widen_mid_block<Isa, P>(c, s[r], part[r]);
    }
  }
  __m256 dw, mw;
  scales(dw, mw);
  for (int r = 0; r < R; ++r) {
    const ActQ8& a = x[r * nb + b];
    const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(a.d));
    chain[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_sum<Isa, P>(s[r], part[r])), sc, chain[r]);
    chain[r] = _mm256_fmadd_ps(mw, _mm256_set1_ps(a.ds), chain[r]);
  }
}

// Weight block wi of g against activation block b of each row.
template <typename Isa, typename P, int R>
__attribute__((always_inline)) inline void q4_block(const P* g, int64_t wi, const ActQ8* x,
                                                    int64_t nb, int64_t b, __m256* chain) {
  q4_rows_block<Isa, P, R>(
      [&](int c, __m256i& wl, __m256i& wh)
          __attribute__((always_inline)) { q4_chunk<Isa>(g, wi, c, wl, wh); },
      [&](__m256 & dw, __m256 & mw) __attribute__((always_inline)) { q4_scales(g, wi, dw, mw); }, x,
      nb, b, chain);
}

// q8x2, T tokens: x rows 2t (main) and 2t + 1 (residual, scale main.d / 256). Each token's integer
// sums combine as s = (s_main << 8) + s_res (|s| < 2^24 for 4-bit weights, so exact in float),
// then chain = fma(float(s), dw * d_res, chain); chain = fma(mw, ds_main + ds_res, chain).
static_assert(kQ8x2ResidualRatio == 1 << 8);
inline __m256i combine_x2(__m256i s_main, __m256i s_res) {
  return _mm256_add_epi32(_mm256_slli_epi32(s_main, 8), s_res);
}

template <typename Isa, typename P, int T>
__attribute__((always_inline)) inline void q4_block_x2(const P* g, int64_t wi, const ActQ8* x,
                                                       int64_t nb, int64_t b, __m256* chain) {
  typename Isa::Acc4 sm[T], sr[T];
  __m256i pm[T], pr[T];
  for (int t = 0; t < T; ++t) sm[t] = sr[t] = Isa::zero4();
  for (int c = 0; c < 4; ++c) {
    __m256i wl, wh;
    q4_chunk<Isa>(g, wi, c, wl, wh);
    for (int t = 0; t < T; ++t) {
      const int8_t* qm = x[2 * t * nb + b].qs;
      const int8_t* qr = x[(2 * t + 1) * nb + b].qs;
      sm[t] = Isa::dot_u4(sm[t], wl, bcast4(qm + 4 * c));
      sm[t] = Isa::dot_u4(sm[t], wh, bcast4(qm + 16 + 4 * c));
      sr[t] = Isa::dot_u4(sr[t], wl, bcast4(qr + 4 * c));
      sr[t] = Isa::dot_u4(sr[t], wh, bcast4(qr + 16 + 4 * c));
      widen_mid_block<Isa, P>(c, sm[t], pm[t]);
      widen_mid_block<Isa, P>(c, sr[t], pr[t]);
    }
  }
  __m256 dw, mw;
  q4_scales(g, wi, dw, mw);
  for (int t = 0; t < T; ++t) {
    const ActQ8& m = x[2 * t * nb + b];
    const ActQ8& r = x[(2 * t + 1) * nb + b];
    const __m256i s = combine_x2(block_sum<Isa, P>(sm[t], pm[t]), block_sum<Isa, P>(sr[t], pr[t]));
    const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(r.d));
    chain[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), sc, chain[t]);
    chain[t] = _mm256_fmadd_ps(mw, _mm256_set1_ps(m.ds + r.ds), chain[t]);
  }
}

// Two float chains per row, even and odd blocks, summed at the end: the order the 512-bit
// kernels (packed_gemm_avx512_vnni.cpp), which hold a block pair per vector, also follow, so all
// instruction sets give the same bits. block(b, chain) adds group block b into chain[0..R).
template <int R, typename P, typename Block>
__attribute__((always_inline)) inline void even_odd_rows(const P* g, int64_t nb, Block&& block,
                                                         float* y, int64_t ys, int valid,
                                                         unsigned flags) {
  __m256 even[R], odd[R];
  for (int r = 0; r < R; ++r) even[r] = odd[r] = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 1 < nb; b += 2) {
    if (flags & kPrefetchWeights) prefetch_block(g, b);
    block(b, even);
    if (flags & kPrefetchWeights) prefetch_block(g, b + 1);
    block(b + 1, odd);
  }
  if (b < nb) {
    if (flags & kPrefetchWeights) prefetch_block(g, b);
    block(b, even);
  }
  for (int r = 0; r < R; ++r) even[r] = _mm256_add_ps(even[r], odd[r]);
  store_results<R>(even, y, ys, valid);
}

template <typename Isa, typename P, int R>
void q4_rows(const P* g, const ActQ8* x, int64_t nb, float* y, int64_t ys, int valid,
             unsigned flags) {
  even_odd_rows<R>(
      g, nb, [&](int64_t b, __m256* chain) { q4_block<Isa, P, R>(g, b, x, nb, b, chain); }, y, ys,
      valid, flags);
}

template <typename Isa, int R>
__attribute__((always_inline)) inline void q8_0_block(const PackQ8_0x8& p, const ActQ8* x,
                                                      int64_t nb, int64_t b, __m256* chain) {
  __m256i s[R];
  for (int r = 0; r < R; ++r) s[r] = _mm256_setzero_si256();
  for (int c = 0; c < 8; ++c) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.qs + 32 * c));
    const __m256i aw = _mm256_sign_epi8(v, v);
    for (int r = 0; r < R; ++r) {
      const __m256i xs = _mm256_sign_epi8(bcast4(x[r * nb + b].qs + 4 * c), v);
      s[r] = Isa::dot_s8(s[r], aw, xs);
    }
  }
  const __m256 dw = load_halves(p.d);
  for (int r = 0; r < R; ++r) {
    const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(x[r * nb + b].d));
    chain[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r]), sc, chain[r]);
  }
}

// As q4_block_x2; with 8-bit weights |s| may pass 2^24, and its conversion to float rounds the
// same way in every kernel.
template <typename Isa, int T>
__attribute__((always_inline)) inline void q8_0_block_x2(const PackQ8_0x8& p, const ActQ8* x,
                                                         int64_t nb, int64_t b, __m256* chain) {
  __m256i sm[T], sr[T];
  for (int t = 0; t < T; ++t) sm[t] = sr[t] = _mm256_setzero_si256();
  for (int c = 0; c < 8; ++c) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.qs + 32 * c));
    const __m256i aw = _mm256_sign_epi8(v, v);
    for (int t = 0; t < T; ++t) {
      const __m256i xm = _mm256_sign_epi8(bcast4(x[2 * t * nb + b].qs + 4 * c), v);
      const __m256i xr = _mm256_sign_epi8(bcast4(x[(2 * t + 1) * nb + b].qs + 4 * c), v);
      sm[t] = Isa::dot_s8(sm[t], aw, xm);
      sr[t] = Isa::dot_s8(sr[t], aw, xr);
    }
  }
  const __m256 dw = load_halves(p.d);
  for (int t = 0; t < T; ++t) {
    const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(x[(2 * t + 1) * nb + b].d));
    chain[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(combine_x2(sm[t], sr[t])), sc, chain[t]);
  }
}

template <typename Isa, int R>
void q8_0_rows(const PackQ8_0x8* g, const ActQ8* x, int64_t nb, float* y, int64_t ys, int valid,
               unsigned flags) {
  even_odd_rows<R>(
      g, nb, [&](int64_t b, __m256* chain) { q8_0_block<Isa, R>(g[b], x, nb, b, chain); }, y, ys,
      valid, flags);
}

// The q8x2 forms (kSumRowPairs): T tokens of x row pairs, one float chain per token.
template <typename Isa, typename P, int T>
void q4_tokens_x2(const P* g, const ActQ8* x, int64_t nb, float* y, int64_t ys, int valid,
                  unsigned flags) {
  even_odd_rows<T>(
      g, nb, [&](int64_t b, __m256* chain) { q4_block_x2<Isa, P, T>(g, b, x, nb, b, chain); }, y,
      ys, valid, flags);
}

template <typename Isa, int T>
void q8_0_tokens_x2(const PackQ8_0x8* g, const ActQ8* x, int64_t nb, float* y, int64_t ys,
                    int valid, unsigned flags) {
  even_odd_rows<T>(
      g, nb, [&](int64_t b, __m256* chain) { q8_0_block_x2<Isa, T>(g[b], x, nb, b, chain); }, y, ys,
      valid, flags);
}

// run(std::integral_constant<int, n>{}) for n in [Nc, MaxN].
template <int Nc, int MaxN, typename Run>
void dispatch_count(int n, Run&& run) {
  if constexpr (Nc < MaxN) {
    if (n != Nc) return dispatch_count<Nc + 1, MaxN>(n, run);
  }
  run(std::integral_constant<int, Nc>{});
}

// R rows (1 <= R <= MaxR), or with kSumRowPairs R / 2 tokens of row pairs (R / 2 <= MaxT).
template <typename Isa, typename P, int MaxR, int MaxT>
void q4_group(const void* gv, const ActQ8* x, int64_t nb, int R, float* y, int64_t ys, int valid,
              unsigned flags) {
  const auto* g = static_cast<const P*>(gv);
  if (flags & kSumRowPairs) {
    dispatch_count<1, MaxT>(R / 2, [&](auto t) {
      q4_tokens_x2<Isa, P, decltype(t)::value>(g, x, nb, y, ys, valid, flags);
    });
  } else {
    dispatch_count<1, MaxR>(
        R, [&](auto r) { q4_rows<Isa, P, decltype(r)::value>(g, x, nb, y, ys, valid, flags); });
  }
}

template <typename Isa, int MaxR, int MaxT>
void q8_0_group(const void* gv, const ActQ8* x, int64_t nb, int R, float* y, int64_t ys, int valid,
                unsigned flags) {
  const auto* g = static_cast<const PackQ8_0x8*>(gv);
  if (flags & kSumRowPairs) {
    dispatch_count<1, MaxT>(R / 2, [&](auto t) {
      q8_0_tokens_x2<Isa, decltype(t)::value>(g, x, nb, y, ys, valid, flags);
    });
  } else {
    dispatch_count<1, MaxR>(
        R, [&](auto r) { q8_0_rows<Isa, decltype(r)::value>(g, x, nb, y, ys, valid, flags); });
  }
}

}  // namespace
}  // namespace llmserve::kernels::cpu
