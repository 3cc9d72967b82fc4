// Packed micro-kernels with AVX-512 VNNI (vpdpbusd: 4 byte products summed straight into 32 bits):
// the 256-bit kernels of packed_gemm_impl.h, and 512-bit kernels (Q4_0, Q4_1, Q8_0) that hold two
// group blocks per vector (lane 2j: block b, row j; lane 2j + 1: block b + 1, row j) against
// activations re-laid by pair_act_blocks, halving the instructions per product. Their float
// chains (even blocks, odd blocks) are the 256-bit kernels', so results match bit for bit. The
// _x2 kernels are the q8x2 forms (see q4_block_x2).
// Everything in this file is built for that target and has internal linkage, so nothing here
// leaks into code run on CPUs without it. The target flags are set on this file alone in
// kernels/CMakeLists.txt (GCC and clang alike).
#include "kernels/cpu/packed_pair_avx512.h"

#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace llmserve::kernels::cpu {
namespace {

// The pair kernels: W groups (consecutive in memory, nb blocks each) against R activation rows, so
// each activation broadcast feeds W weight vectors (the loads, not the dot products, bound them).
template <typename P, int W, int R>
void q4_pair_rows(const P* g, const ActQ8* x, int64_t nb, float* y, int64_t ys, int valid,
                  unsigned flags) {
  __m512 acc[W][R];
  zero(acc);
  const int64_t np = nb / 2;
  for (int64_t p = 0; p < np; ++p) {
    __m512i s[W][R];
    prefetch_pair<W>(g, nb, p, flags);
    for (int w = 0; w < W; ++w)
      for (int r = 0; r < R; ++r) s[w][r] = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      __m512i wl[W], wh[W];
      q4_pair_chunk<W>(g, nb, p, c, wl, wh);
      for (int r = 0; r < R; ++r) {
        q4_pair_dot(s, r, wl, wh, reinterpret_cast<const ActQ8Pair*>(x + r * nb)[p].qs, c);
      }
    }
    __m512 dw[W], mw[W];
    q4_pair_scales<W>(g, nb, p, dw, mw);
    for (int r = 0; r < R; ++r) {
      const ActQ8Pair& a = reinterpret_cast<const ActQ8Pair*>(x + r * nb)[p];
      const __m512 d = bcast_pair(a.d), ds = bcast_pair(a.ds);
      for (int w = 0; w < W; ++w) {
        const __m512 sc = _mm512_mul_ps(dw[w], d);
        acc[w][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[w][r]), sc, acc[w][r]);
        acc[w][r] = _mm512_fmadd_ps(mw[w], ds, acc[w][r]);
      }
    }
  }
  finish_groups(acc, nb, y, ys, valid, [&](int w, __m256* chain) {
    q4_block<Avx512Vnni, P, R>(g, w * nb + nb - 1, x, nb, nb - 1, chain);
  });
}

// q8x2 form of q4_pair_rows: T tokens of (main, residual) row pairs, their integer sums combined
// per token as in q4_block_x2, one float chain per token.
template <typename P, int W, int T>
void q4_pair_tokens_x2(const P* g, const ActQ8* x, int64_t nb, float* y, int64_t ys, int valid,
                       unsigned flags) {
  __m512 acc[W][T];
  zero(acc);
  const int64_t np = nb / 2;
  for (int64_t p = 0; p < np; ++p) {
    __m512i sm[W][T], sr[W][T];
    prefetch_pair<W>(g, nb, p, flags);
    for (int w = 0; w < W; ++w)
      for (int t = 0; t < T; ++t) sm[w][t] = sr[w][t] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m512i wl[W], wh[W];
      q4_pair_chunk<W>(g, nb, p, c, wl, wh);
      for (int t = 0; t < T; ++t) {
        q4_pair_dot(sm, t, wl, wh, reinterpret_cast<const ActQ8Pair*>(x + 2 * t * nb)[p].qs, c);
        q4_pair_dot(sr, t, wl, wh, reinterpret_cast<const ActQ8Pair*>(x + (2 * t + 1) * nb)[p].qs,
                    c);
      }
    }
    __m512 dw[W], mw[W];
    q4_pair_scales<W>(g, nb, p, dw, mw);
    for (int t = 0; t < T; ++t) {
      const ActQ8Pair& m = reinterpret_cast<const ActQ8Pair*>(x + 2 * t * nb)[p];
      const ActQ8Pair& r = reinterpret_cast<const ActQ8Pair*>(x + (2 * t + 1) * nb)[p];
      const __m512 d = bcast_pair(r.d);
      const __m512 ds = _mm512_add_ps(bcast_pair(m.ds), bcast_pair(r.ds));
      for (int w = 0; w < W; ++w) {
        const __m512i s = combine_x2(sm[w][t], sr[w][t]);
        acc[w][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw[w], d), acc[w][t]);
        acc[w][t] = _mm512_fmadd_ps(mw[w], ds, acc[w][t]);
      }
    }
  }
  finish_groups(acc, nb, y, ys, valid, [&](int w, __m256* chain) {
    q4_block_x2<Avx512Vnni, P, T>(g, w * nb + nb - 1, x, nb, nb - 1, chain);
  });
}

// Q8_0: weights as unsigned bytes w ^ 0x80 = w + 128; each dot product starts from the row's
// -128 * sum(x) (ActQ8Pair::q8_0_correction), so the integer sums are exact.
template <int W, int R>
void q8_0_pair_rows(const PackQ8_0x8* g, const ActQ8* x, int64_t nb, float* y, int64_t ys,
                    int valid, unsigned flags) {
  __m512 acc[W][R];
  zero(acc);
  const int64_t np = nb / 2;
  for (int64_t p = 0; p < np; ++p) {
    __m512i s[W][R];
    for (int r = 0; r < R; ++r) {
      const __m512i corr = bcast8(reinterpret_cast<const int8_t*>(
          reinterpret_cast<const ActQ8Pair*>(x + r * nb)[p].q8_0_correction));
      for (int w = 0; w < W; ++w) s[w][r] = corr;
    }
    prefetch_pair<W>(g, nb, p, flags);
    for (int c = 0; c < 8; ++c) {
      __m512i wv[W];
      q8_0_pair_chunk<W>(g, nb, p, c, wv);
      for (int r = 0; r < R; ++r) {
        const __m512i xq = bcast8(reinterpret_cast<const ActQ8Pair*>(x + r * nb)[p].qs + 8 * c);
        for (int w = 0; w < W; ++w) s[w][r] = _mm512_dpbusd_epi32(s[w][r], wv[w], xq);
      }
    }
    __m512 dw[W];
    q8_0_pair_scales<W>(g, nb, p, dw);
    for (int r = 0; r < R; ++r) {
      const __m512 d = bcast_pair(reinterpret_cast<const ActQ8Pair*>(x + r * nb)[p].d);
      for (int w = 0; w < W; ++w) {
        acc[w][r] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[w][r]), _mm512_mul_ps(dw[w], d), acc[w][r]);
      }
    }
  }
  finish_groups(acc, nb, y, ys, valid, [&](int w, __m256* chain) {
    q8_0_block<Avx512Vnni, R>(g[w * nb + nb - 1], x, nb, nb - 1, chain);
  });
}

// q8x2 form of q8_0_pair_rows (each integer sum starts from its own row's correction, so both are
// exact before they combine).
template <int W, int T>
void q8_0_pair_tokens_x2(const PackQ8_0x8* g, const ActQ8* x, int64_t nb, float* y, int64_t ys,
                         int valid, unsigned flags) {
  __m512 acc[W][T];
  zero(acc);
  const int64_t np = nb / 2;
  for (int64_t p = 0; p < np; ++p) {
    __m512i sm[W][T], sr[W][T];
    for (int t = 0; t < T; ++t) {
      const ActQ8Pair& m = reinterpret_cast<const ActQ8Pair*>(x + 2 * t * nb)[p];
      const ActQ8Pair& r = reinterpret_cast<const ActQ8Pair*>(x + (2 * t + 1) * nb)[p];
      const __m512i cm = bcast8(reinterpret_cast<const int8_t*>(m.q8_0_correction));
      const __m512i cr = bcast8(reinterpret_cast<const int8_t*>(r.q8_0_correction));
      for (int w = 0; w < W; ++w) {
        sm[w][t] = cm;
        sr[w][t] = cr;
      }
    }
    prefetch_pair<W>(g, nb, p, flags);
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      __m512i wv[W];
      q8_0_pair_chunk<W>(g, nb, p, c, wv);
      for (int t = 0; t < T; ++t) {
        const __m512i xm = bcast8(reinterpret_cast<const ActQ8Pair*>(x + 2 * t * nb)[p].qs + 8 * c);
        for (int w = 0; w < W; ++w) sm[w][t] = _mm512_dpbusd_epi32(sm[w][t], wv[w], xm);
        const __m512i xr =
            bcast8(reinterpret_cast<const ActQ8Pair*>(x + (2 * t + 1) * nb)[p].qs + 8 * c);
        for (int w = 0; w < W; ++w) sr[w][t] = _mm512_dpbusd_epi32(sr[w][t], wv[w], xr);
      }
    }
    __m512 dw[W];
    q8_0_pair_scales<W>(g, nb, p, dw);
    for (int t = 0; t < T; ++t) {
      const __m512 d = bcast_pair(reinterpret_cast<const ActQ8Pair*>(x + (2 * t + 1) * nb)[p].d);
      for (int w = 0; w < W; ++w) {
        const __m512i s = combine_x2(sm[w][t], sr[w][t]);
        acc[w][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw[w], d), acc[w][t]);
      }
    }
  }
  finish_groups(acc, nb, y, ys, valid, [&](int w, __m256* chain) {
    q8_0_block_x2<Avx512Vnni, T>(g[w * nb + nb - 1], x, nb, nb - 1, chain);
  });
}

// Q6_K or Q2_K against pair-laid activations (their ds slots holding half sums): R rows, or with
// kSumRowPairs R / 2 tokens; one group (8 rows) per call. The pair's weights are unpacked once
// (q6_pair_weights) for every row, each row's sums and float steps in q6_pair_token.
template <typename P, int R, bool X2>
void q6_pair_kernel(const P* g, const ActQ8* x, int64_t nb, float* y, int64_t ys, int valid,
                    unsigned flags) {
  constexpr int T = X2 ? R / 2 : R;  // chains
  constexpr int kRows = X2 ? 2 : 1;
  __m512 acc[1][T];
  zero(acc);
  for (int64_t p = 0; p < nb / 2; ++p) {
    prefetch_pair<1>(g, nb, p, flags);
    const Q6PairWeights w = q6_pair_weights(g, 2 * p);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const ActQ8Pair* rows[kRows];
      for (int r = 0; r < kRows; ++r) {
        rows[r] = reinterpret_cast<const ActQ8Pair*>(x + (kRows * t + r) * nb) + p;
      }
      acc[0][t] = q6_pair_token<P, X2>(w, rows, acc[0][t]);
    }
  }
  // nb is a multiple of 8: no last odd block.
  finish_groups(acc, nb, y, ys, valid, [](int, __m256*) {});
}

// Up to MaxR rows or MaxT tokens per call, one or two groups (valid > 8).
template <typename P, int MaxR, int MaxT>
void q6_pair_group(const void* gv, const ActQ8* x, int64_t nb, int R, float* y, int64_t ys,
                   int valid, unsigned flags) {
  const auto* g = static_cast<const P*>(gv);
  for (int w = 0; w * kGroupRows < valid; ++w) {
    const int v = valid_rows(valid, w);
    const P* gw = g + w * nb / kSubBlocks;
    if (flags & kSumRowPairs) {
      dispatch_count<1, MaxT>(R / 2, [&](auto t) {
        q6_pair_kernel<P, 2 * decltype(t)::value, true>(gw, x, nb, y + kGroupRows * w, ys, v,
                                                        flags);
      });
    } else {
      dispatch_count<1, MaxR>(R, [&](auto r) {
        q6_pair_kernel<P, decltype(r)::value, false>(gw, x, nb, y + kGroupRows * w, ys, v, flags);
      });
    }
  }
}

// The kernel instantiated for R rows (1 <= R <= MaxR), or with kSumRowPairs for R / 2 tokens
// (<= MaxT); one group, or two when valid > 8.
template <int MaxR, int MaxT>
void q8_0_pair_group(const void* gv, const ActQ8* x, int64_t nb, int R, float* y, int64_t ys,
                     int valid, unsigned flags) {
  const auto* g = static_cast<const PackQ8_0x8*>(gv);
  if (flags & kSumRowPairs) {
    dispatch_count<1, MaxT>(R / 2, [&](auto t) {
      if (valid > kGroupRows) {
        q8_0_pair_tokens_x2<2, decltype(t)::value>(g, x, nb, y, ys, valid, flags);
      } else {
        q8_0_pair_tokens_x2<1, decltype(t)::value>(g, x, nb, y, ys, valid, flags);
      }
    });
    return;
  }
  dispatch_count<1, MaxR>(R, [&](auto rc) {
    if (valid > kGroupRows) {
      q8_0_pair_rows<2, decltype(rc)::value>(g, x, nb, y, ys, valid, flags);
    } else {
      q8_0_pair_rows<1, decltype(rc)::value>(g, x, nb, y, ys, valid, flags);
    }
  });
}

template <typename P, int MaxR, int MaxT>
void q4_pair_group(const void* gv, const ActQ8* x, int64_t nb, int R, float* y, int64_t ys,
                   int valid, unsigned flags) {
  const auto* g = static_cast<const P*>(gv);
  if (flags & kSumRowPairs) {
    dispatch_count<1, MaxT>(R / 2, [&](auto t) {
      if (valid > kGroupRows) {
        q4_pair_tokens_x2<P, 2, decltype(t)::value>(g, x, nb, y, ys, valid, flags);
      } else {
        q4_pair_tokens_x2<P, 1, decltype(t)::value>(g, x, nb, y, ys, valid, flags);
      }
    });
    return;
  }
  dispatch_count<1, MaxR>(R, [&](auto rc) {
    if (valid > kGroupRows) {
      q4_pair_rows<P, 2, decltype(rc)::value>(g, x, nb, y, ys, valid, flags);
    } else {
      q4_pair_rows<P, 1, decltype(rc)::value>(g, x, nb, y, ys, valid, flags);
    }
  });
}

}  // namespace

PackedKernels packed_kernels_avx512_vnni(bool pairs) {
  PackedKernels k = make_packed_kernels<Avx512Vnni, 8, 6>();
  if (pairs) {
    // Registers: two groups x (6 rows x (sum + chain)), or (4 tokens x (2 sums + chain)).
    constexpr int kMaxPairRows = 6, kMaxPairTokensX2 = 4;
    k.pairs[kPackQ4_0] = &q4_pair_group<PackQ4_0x8, kMaxPairRows, kMaxPairTokensX2>;
    k.pairs[kPackQ4_1] = &q4_pair_group<PackQ4_1x8, kMaxPairRows, kMaxPairTokensX2>;
    k.pairs[kPackQ8_0] = &q8_0_pair_group<kMaxPairRows, kMaxPairTokensX2>;
    k.pairs[kPackQ4_K] = &q4_pair_group<PackQ4_Kx8, kMaxPairRows, kMaxPairTokensX2>;
    k.pairs[kPackQ5_K] = &q4_pair_group<PackQ5_Kx8, kMaxPairRows, kMaxPairTokensX2>;
    k.pairs[kPackQ6_K] = &q6_pair_group<PackQ6_Kx8, kMaxPairRows, kMaxPairTokensX2>;
    k.pairs[kPackQ2_K] = &q6_pair_group<PackQ2_Kx8, kMaxPairRows, kMaxPairTokensX2>;
    k.max_rows_pairs = kMaxPairRows;
    k.max_tokens_x2_pairs = kMaxPairTokensX2;
    // LLMSERVE_CPU_PAIR_GROUPS=1: one group per call, for side-by-side measurements.
    const char* groups = std::getenv("LLMSERVE_CPU_PAIR_GROUPS");
    k.pair_groups = groups != nullptr && std::strcmp(groups, "1") == 0 ? 1 : 2;
    // LLMSERVE_CPU_WIDE=0: without the wide q8x2 kernels, for side-by-side measurements.
    const char* wide = std::getenv("LLMSERVE_CPU_WIDE");
    if (!(wide != nullptr && std::strcmp(wide, "0") == 0)) add_wide_kernels_avx512_vnni(k);
  }
  return k;
}

}  // namespace llmserve::kernels::cpu
