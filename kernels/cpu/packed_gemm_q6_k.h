// Internal: the 256-bit micro-kernels for the packs with one scale per 16 elements, PackQ6_Kx8
// (Q6_K, and Q3_K packed as Q6_K) and PackQ2_Kx8, written against the Isa policy of
// packed_gemm_impl.h, and make_packed_kernels, which gathers every 256-bit kernel of an
// instruction set. The activations' ds slots hold, instead of ds, the int16 sums of each half
// block (store_half_sums, quantize_activations.h). For Q6_K the integer sums start from -32 times
// them (q6_start_sums); Q2_K's min term is -dmin (mn_lo S_lo + mn_hi S_hi).
#pragma once

#include "kernels/cpu/packed_gemm_impl.h"

namespace llmserve::kernels::cpu {
namespace {

// Chunk c's high 2 bits (bits 2c, 2c + 1 of each byte of h) moved to bits 4, 5.
inline __m256i q6_high_bits(__m256i h, int c) {
  const __m256i m = _mm256_set1_epi8(0x30);
  switch (c) {
    case 0:
      return _mm256_and_si256(_mm256_slli_epi16(h, 4), m);
    case 1:
      return _mm256_and_si256(_mm256_slli_epi16(h, 2), m);
    case 2:
      return _mm256_and_si256(h, m);
    default:
      return _mm256_and_si256(_mm256_srli_epi16(h, 2), m);
  }
}

inline __m256i bcast_half_sums(const ActQ8& a) {
  int32_t v;
  __builtin_memcpy(&v, &a.ds, 4);
  return _mm256_set1_epi32(v);
}

template <typename P>
inline constexpr bool kHasHighBits = std::is_same_v<P, PackQ6_Kx8>;

// Per row of block j: the float scales d * sc_lo, d * sc_hi and, for Q2_K's min term, the int16
// pairs (mn_lo, mn_hi) and c = -dmin (Q6_K: zero).
struct Q6Scales {
  __m256i pairs;
  __m256 lo, hi, corr;
};
inline __m256i load_pairs(const int8_t (&p)[kGroupRows][2]) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
template <typename P>
inline Q6Scales q6_scales(const P& s, int64_t j) {
  Q6Scales q;
  const __m256i sc = load_pairs(s.sc[j]);
  const __m256 d = load_halves(s.d);
  q.lo = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(sc, 16), 16)));
  q.hi = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_srai_epi32(sc, 16)));
  if constexpr (kHasHighBits<P>) {
    q.pairs = _mm256_setzero_si256();
    q.corr = _mm256_setzero_ps();
  } else {
    q.pairs = load_pairs(s.mn[j]);
    q.corr = _mm256_mul_ps(load_halves(s.dmin), _mm256_set1_ps(-1.0f));
  }
  return q;
}

// Chunk c of block j: the quants of the low and high nibble lanes as bytes.
template <typename P>
__attribute__((always_inline)) inline void q6_chunk(const P& s, int64_t j, int c, __m256i hl,
                                                    __m256i hh, __m256i& wl, __m256i& wh) {
  const __m256i lo = _mm256_set1_epi8(0x0F);
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.qs[j] + 32 * c));
  wl = _mm256_and_si256(v, lo);
  wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo);
  if constexpr (kHasHighBits<P>) {
    wl = _mm256_or_si256(wl, q6_high_bits(hl, c));
    wh = _mm256_or_si256(wh, q6_high_bits(hh, c));
  }
}

template <typename P>
inline __m256i load_qh(const P& s, int64_t j, int h) {
  if constexpr (kHasHighBits<P>) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.qh[j][h]));
  } else {
    return _mm256_setzero_si256();
  }
}

// Q6_K: the -32 offset enters the integer sums, each starting from -32 times its activations'
// half sum, so s_lo / s_hi = sum x * (q - 32) exactly and x . w = d_x (d sc_lo s_lo + d sc_hi
// s_hi): two float steps. Q2_K keeps its min term, the third (c = -dmin).
inline int32_t q6_offset_start(const ActQ8& a, int h) {
  int16_t sums[2];
  __builtin_memcpy(sums, &a.ds, 4);
  return -32 * sums[h];
}
template <typename P>
__attribute__((always_inline)) inline void q6_start_sums(const ActQ8& a, __m256i& s_lo,
                                                         __m256i& s_hi) {
  if constexpr (kHasHighBits<P>) {
    s_lo = _mm256_set1_epi32(q6_offset_start(a, 0));
    s_hi = _mm256_set1_epi32(q6_offset_start(a, 1));
  } else {
    s_lo = s_hi = _mm256_setzero_si256();
  }
}

// The float steps of one row (or token) and block: Q6_K's two (the offset is in s_lo / s_hi), or
// Q2_K's three.
template <typename P>
__attribute__((always_inline)) inline __m256 q6_float_step(const Q6Scales& q, __m256i s_lo,
                                                           __m256i s_hi, __m256i corr, float d_x,
                                                           __m256 chain) {
  const __m256 dx = _mm256_set1_ps(d_x);
  if constexpr (kHasHighBits<P>) {
    __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(s_lo), q.lo);
    t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s_hi), q.hi, t);
    return _mm256_fmadd_ps(t, dx, chain);
  } else {
    chain = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s_lo), _mm256_mul_ps(q.lo, dx), chain);
    chain = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s_hi), _mm256_mul_ps(q.hi, dx), chain);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(corr), _mm256_mul_ps(q.corr, dx), chain);
  }
}

// Q2_K's min term of row a (Q6_K: none).
template <typename P>
__attribute__((always_inline)) inline __m256i q6_min_term(const Q6Scales& q, const ActQ8& a) {
  if constexpr (kHasHighBits<P>) {
    return _mm256_setzero_si256();
  } else {
    return _mm256_madd_epi16(q.pairs, bcast_half_sums(a));
  }
}

// Weight block wi of g against activation block b of R rows. The quants are at most 63, so the
// AVX2 pair sums (2 x 63 x 128) stay within 16 bits: Isa::dot_s8 takes them as unsigned bytes.
template <typename Isa, typename P, int R>
__attribute__((always_inline)) inline void q6_block(const P* g, int64_t wi, const ActQ8* x,
                                                    int64_t nb, int64_t b, __m256* chain) {
  const P& s = g[wi / kSubBlocks];
  const int64_t j = wi % kSubBlocks;
  const __m256i hl = load_qh(s, j, 0), hh = load_qh(s, j, 1);
  __m256i sl[R], sh[R];
  for (int r = 0; r < R; ++r) q6_start_sums<P>(x[r * nb + b], sl[r], sh[r]);
  for (int c = 0; c < 4; ++c) {
    __m256i wl, wh;
    q6_chunk(s, j, c, hl, hh, wl, wh);
    for (int r = 0; r < R; ++r) {
      const int8_t* q = x[r * nb + b].qs;
      sl[r] = Isa::dot_s8(sl[r], wl, bcast4(q + 4 * c));
      sh[r] = Isa::dot_s8(sh[r], wh, bcast4(q + 16 + 4 * c));
    }
  }
  const Q6Scales q = q6_scales(s, j);
  for (int r = 0; r < R; ++r) {
    const ActQ8& a = x[r * nb + b];
    chain[r] = q6_float_step<P>(q, sl[r], sh[r], q6_min_term<P>(q, a), a.d, chain[r]);
  }
}

// q8x2: per token, main and residual sums combine as in q4_block_x2 (s_main * 256 + s_res).
template <typename Isa, typename P, int T>
__attribute__((always_inline)) inline void q6_block_x2(const P* g, int64_t wi, const ActQ8* x,
                                                       int64_t nb, int64_t b, __m256* chain) {
  const P& s = g[wi / kSubBlocks];
  const int64_t j = wi % kSubBlocks;
  const __m256i hl = load_qh(s, j, 0), hh = load_qh(s, j, 1);
  __m256i ml[T], mh[T], rl[T], rh[T];
  for (int t = 0; t < T; ++t) {
    q6_start_sums<P>(x[2 * t * nb + b], ml[t], mh[t]);
    q6_start_sums<P>(x[(2 * t + 1) * nb + b], rl[t], rh[t]);
  }
  for (int c = 0; c < 4; ++c) {
    __m256i wl, wh;
    q6_chunk(s, j, c, hl, hh, wl, wh);
    for (int t = 0; t < T; ++t) {
      const int8_t* qm = x[2 * t * nb + b].qs;
      const int8_t* qr = x[(2 * t + 1) * nb + b].qs;
      ml[t] = Isa::dot_s8(ml[t], wl, bcast4(qm + 4 * c));
      mh[t] = Isa::dot_s8(mh[t], wh, bcast4(qm + 16 + 4 * c));
      rl[t] = Isa::dot_s8(rl[t], wl, bcast4(qr + 4 * c));
      rh[t] = Isa::dot_s8(rh[t], wh, bcast4(qr + 16 + 4 * c));
    }
  }
  const Q6Scales q = q6_scales(s, j);
  for (int t = 0; t < T; ++t) {
    const ActQ8& m = x[2 * t * nb + b];
    const ActQ8& r = x[(2 * t + 1) * nb + b];
    const __m256i corr = combine_x2(q6_min_term<P>(q, m), q6_min_term<P>(q, r));
    chain[t] = q6_float_step<P>(q, combine_x2(ml[t], rl[t]), combine_x2(mh[t], rh[t]), corr, r.d,
                                chain[t]);
  }
}

// Single-pass Q6_K with vpmaddubsw (AVX2), the operations of q6_block in fewer instructions: two
// chunks' pair sums add in 16 bits (2 x 2 x 63 x 128 < 2^15) before one vpmaddwd widens them, and
// the -32 offset starts each sum from one vpmaddwd of the half sums. The same integer sums and
// float steps as q6_block, so the same bits.
// load(c, wl0, wh0, wl1, wh1) gives chunks c and c + 1, scales() the block's Q6Scales: from the
// pack here, from a scratch in packed_gemm_avx2_unpacked.cpp.
template <int R, typename LoadChunkPair, typename LoadScales>
__attribute__((always_inline)) inline void q6_rows_avx2(LoadChunkPair&& load, LoadScales&& scales,
                                                        const ActQ8* x, int64_t nb, int64_t b,
                                                        __m256* chain) {
  const __m256i lo_start = _mm256_set1_epi32(0x0000FFE0), hi_start = _mm256_set1_epi32(-0x200000);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i sl[R], sh[R];
  for (int r = 0; r < R; ++r) {
    const __m256i half_sums = bcast_half_sums(x[r * nb + b]);
    sl[r] = _mm256_madd_epi16(half_sums, lo_start);  // -32 * S_lo
    sh[r] = _mm256_madd_epi16(half_sums, hi_start);  // -32 * S_hi
  }
  for (int c = 0; c < 4; c += 2) {
    __m256i wl0, wh0, wl1, wh1;
    load(c, wl0, wh0, wl1, wh1);
    for (int r = 0; r < R; ++r) {
      const int8_t* q = x[r * nb + b].qs + 4 * c;
      const __m256i pl = _mm256_add_epi16(_mm256_maddubs_epi16(wl0, bcast4(q)),
                                          _mm256_maddubs_epi16(wl1, bcast4(q + 4)));
      const __m256i ph = _mm256_add_epi16(_mm256_maddubs_epi16(wh0, bcast4(q + 16)),
                                          _mm256_maddubs_epi16(wh1, bcast4(q + 20)));
      sl[r] = _mm256_add_epi32(sl[r], _mm256_madd_epi16(pl, ones));
      sh[r] = _mm256_add_epi32(sh[r], _mm256_madd_epi16(ph, ones));
    }
  }
  const Q6Scales q = scales();
  for (int r = 0; r < R; ++r) {
    chain[r] = q6_float_step<PackQ6_Kx8>(q, sl[r], sh[r], _mm256_setzero_si256(), x[r * nb + b].d,
                                         chain[r]);
  }
}

template <int R>
__attribute__((always_inline)) inline void q6_block_avx2(const PackQ6_Kx8* g, int64_t wi,
                                                         const ActQ8* x, int64_t nb, int64_t b,
                                                         __m256* chain) {
  const PackQ6_Kx8& s = g[wi / kSubBlocks];
  const int64_t j = wi % kSubBlocks;
  const __m256i hl = load_qh(s, j, 0), hh = load_qh(s, j, 1);
  q6_rows_avx2<R>(
      [&](int c, __m256i& wl0, __m256i& wh0, __m256i& wl1, __m256i& wh1)
          __attribute__((always_inline)) {
            q6_chunk(s, j, c, hl, hh, wl0, wh0);
            q6_chunk(s, j, c + 1, hl, hh, wl1, wh1);
          },
      [&]() __attribute__((always_inline)) { return q6_scales(s, j); }, x, nb, b, chain);
}

// Four integer sums per q8x2 token (two per row) take more registers than the 4-bit kernels' two:
// calls of more tokens (or rows) than Isa::kQ6MaxTokens (kQ6MaxRows for Q6_K, kQ2MaxRows for Q2_K)
// go in slices of at most that many, each reading the group's weights again (from L1 or L2).
template <typename Isa, typename P, int MaxR, int MaxT>
void q6_group(const void* gv, const ActQ8* x, int64_t nb, int R, float* y, int64_t ys, int valid,
              unsigned flags) {
  const auto* g = static_cast<const P*>(gv);
  if (flags & kSumRowPairs) {
    constexpr int kMaxT = MaxT < Isa::kQ6MaxTokens ? MaxT : Isa::kQ6MaxTokens;
    for (int t0 = 0; t0 < R / 2; t0 += kMaxT) {
      const int n = R / 2 - t0 < kMaxT ? R / 2 - t0 : kMaxT;
      const ActQ8* xs = x + 2 * t0 * nb;
      dispatch_count<1, kMaxT>(n, [&](auto t) {
        constexpr int T = decltype(t)::value;
        even_odd_rows<T>(
            g, nb,
            [&](int64_t b, __m256* chain) { q6_block_x2<Isa, P, T>(g, b, xs, nb, b, chain); },
            y + t0 * ys, ys, valid, t0 == 0 ? flags : flags & ~kPrefetchWeights);
      });
    }
  } else {
    constexpr bool kAvx2Rows = Isa::kAcc16 && kHasHighBits<P>;  // vpmaddubsw: q6_block_avx2
    constexpr int kIsaRows = kHasHighBits<P> ? Isa::kQ6MaxRows : Isa::kQ2MaxRows;
    constexpr int kMaxR = MaxR < kIsaRows ? MaxR : kIsaRows;
    for (int r0 = 0; r0 < R; r0 += kMaxR) {
      const int n = R - r0 < kMaxR ? R - r0 : kMaxR;
      const ActQ8* xs = x + r0 * nb;
      dispatch_count<1, kMaxR>(n, [&](auto r) {
        constexpr int Rc = decltype(r)::value;
        even_odd_rows<Rc>(
            g, nb,
            [&](int64_t b, __m256* chain) {
              if constexpr (kAvx2Rows) {
                q6_block_avx2<Rc>(g, b, xs, nb, b, chain);
              } else {
                q6_block<Isa, P, Rc>(g, b, xs, nb, b, chain);
              }
            },
            y + r0 * ys, ys, valid, r0 == 0 ? flags : flags & ~kPrefetchWeights);
      });
    }
  }
}

// MaxR activation rows (or MaxT q8x2 tokens, two integer sums and two chains each) share each
// weight load: 4 rows / 3 tokens fit the 16 AVX2 registers, 8 / 6 the 32 of AVX-512.
template <typename Isa, int MaxR, int MaxT>
PackedKernels make_packed_kernels() {
  PackedKernels k;
  k.rows[kPackQ4_0] = &q4_group<Isa, PackQ4_0x8, MaxR, MaxT>;
  k.rows[kPackQ4_1] = &q4_group<Isa, PackQ4_1x8, MaxR, MaxT>;
  k.rows[kPackQ8_0] = &q8_0_group<Isa, MaxR, MaxT>;
  k.rows[kPackQ4_K] = &q4_group<Isa, PackQ4_Kx8, MaxR, MaxT>;
  k.rows[kPackQ5_K] = &q4_group<Isa, PackQ5_Kx8, MaxR, MaxT>;
  k.rows[kPackQ6_K] = &q6_group<Isa, PackQ6_Kx8, MaxR, MaxT>;
  k.rows[kPackQ2_K] = &q6_group<Isa, PackQ2_Kx8, MaxR, MaxT>;
  k.max_rows = MaxR;
  k.max_tokens_x2 = MaxT;
  return k;
}

}  // namespace
}  // namespace llmserve::kernels::cpu
