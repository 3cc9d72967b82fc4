// Wide kernels with AVX-512 VNNI: one group (8 rows) against 8-16 tokens per call, q8x2 tokens
// (row pairs) or, for Q5_K and Q6_K, single-pass q8 rows (wide_x1). Each block pair's weights are
// unpacked once into registers (4 chunks of low and high nibbles, or 8 chunks of Q8_0 bytes) and
// serve every token of the call, where the pair kernels of packed_gemm_avx512_vnni.cpp redo that
// work for each 4 tokens. The activations come in the wide layout (packed_layout.h), every token at
// a fixed offset from one pointer. Per token and block pair the integer sums (q8x2: main * 256 +
// residual) and the float steps are those of q4_pair_rows / q4_pair_tokens_x2 /
// q8_0_pair_tokens_x2, so results match them, and the 256-bit kernels, bit for bit.
// Built with the AVX-512 VNNI flags (kernels/CMakeLists.txt); called only on CPUs that have them.
#include "kernels/cpu/packed_pair_avx512.h"

#include <type_traits>

namespace llmserve::kernels::cpu {
namespace {

constexpr int kMinWideTokens = 8, kMaxWideTokens = 16;

// The last blocks (nb odd) of the tile's rows from first_row on, one per row.
const ActQ8* odd_blocks(const ActQ8* tile, int64_t nb, int64_t tile_rows, int64_t first_row) {
  return tile + wide_odd_block_index(nb, tile_rows, first_row);
}

// The frame both wide kernels share: per block pair p, step(p, pairs of the call's rows, acc);
// then, with nb odd, last(odd blocks of the call's rows, even chains), and the stores.
template <int T, typename P, typename Step, typename Last>
__attribute__((always_inline)) inline void over_block_pairs(const P* g, const ActQ8* tile,
                                                            int64_t tile_rows, int64_t first_row,
                                                            int64_t nb, float* y, int64_t ys,
                                                            int valid, unsigned flags, Step&& step,
                                                            Last&& last) {
  const ActQ8Pair* rows = reinterpret_cast<const ActQ8Pair*>(tile) + first_row;
  __m512 acc[1][T];
  zero(acc);
  for (int64_t p = 0; p < nb / 2; ++p) {
    prefetch_pair<1>(g, nb, p, flags);
    step(p, rows + p * tile_rows, acc[0]);
  }
  const ActQ8* odd = odd_blocks(tile, nb, tile_rows, first_row);
  finish_groups(acc, nb, y, ys, valid, [&](int, __m256* chain) { last(odd, chain); });
}

// X2: q8x2 tokens, main rows first, then (s << 8) carries on with the residual rows (s_main * 256
// + s_res, one integer sum and one dot-product chain per token, as q4_pair_tokens_x2). Else
// single-pass rows, one per token, with q4_pair_rows' integer sums and float steps.
template <typename P, int T, bool X2>
void q4_wide(const P* g, const ActQ8* tile, int64_t tile_rows, int64_t first_row, int64_t nb,
             float* y, int64_t ys, int valid, unsigned flags) {
  constexpr int kRows = X2 ? 2 : 1;  // activation rows per token
  auto step = [&](int64_t p, const ActQ8Pair* bp, __m512* acc) __attribute__((always_inline)) {
    __m512i wl[4], wh[4];
    for (int c = 0; c < 4; ++c) q4_pair_chunk<1>(g, nb, p, c, wl + c, wh + c);
    __m512 dw, mw;
    q4_pair_scales<1>(g, nb, p, &dw, &mw);
    __m512i s[T];
    for (int t = 0; t < T; ++t) s[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int row = 0; row < kRows; ++row) {
      if (row == 1) {
        for (int t = 0; t < T; ++t) s[t] = _mm512_slli_epi32(s[t], 8);
      }
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) {
          const int8_t* q = bp[kRows * t + row].qs;
          s[t] = _mm512_dpbusd_epi32(s[t], wl[c], bcast8(q + 8 * c));
          s[t] = _mm512_dpbusd_epi32(s[t], wh[c], bcast8(q + 32 + 8 * c));
        }
      }
    }
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      // With X2 the main row's ds holds main.ds + res.ds in the wide layout
      // (pair_token_to_wide_layout) and the residual row's d scales the combined sum.
      const __m512 d = bcast_pair(bp[kRows * t + kRows - 1].d), ds = bcast_pair(bp[kRows * t].ds);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[t]), _mm512_mul_ps(dw, d), acc[t]);
      acc[t] = _mm512_fmadd_ps(mw, ds, acc[t]);
    }
  };
  over_block_pairs<T>(g, tile, tile_rows, first_row, nb, y, ys, valid, flags, step,
                      [&](const ActQ8* odd, __m256* chain) {
                        if constexpr (X2) {
                          q4_block_x2<Avx512Vnni, P, T>(g, nb - 1, odd, 1, 0, chain);
                        } else {
                          q4_block<Avx512Vnni, P, T>(g, nb - 1, odd, 1, 0, chain);
                        }
                      });
}

template <int T>
void q8_0_wide_x2(const PackQ8_0x8* g, const ActQ8* tile, int64_t tile_rows, int64_t first_row,
                  int64_t nb, float* y, int64_t ys, int valid, unsigned flags) {
  auto step = [&](int64_t p, const ActQ8Pair* bp, __m512* acc) __attribute__((always_inline)) {
    __m512i wv[8];
    for (int c = 0; c < 8; ++c) q8_0_pair_chunk<1>(g, nb, p, c, wv + c);
    __m512 dw;
    q8_0_pair_scales<1>(g, nb, p, &dw);
    auto run = [&](auto t0, auto n) {
      constexpr int T0 = decltype(t0)::value, N = decltype(n)::value;
      __m512i sm[N], sr[N];
      for (int t = 0; t < N; ++t) {
        sm[t] = bcast8(reinterpret_cast<const int8_t*>(bp[2 * (T0 + t)].q8_0_correction));
        sr[t] = bcast8(reinterpret_cast<const int8_t*>(bp[2 * (T0 + t) + 1].q8_0_correction));
      }
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {
#pragma GCC unroll 8
        for (int t = 0; t < N; ++t) {
          sm[t] = _mm512_dpbusd_epi32(sm[t], wv[c], bcast8(bp[2 * (T0 + t)].qs + 8 * c));
          sr[t] = _mm512_dpbusd_epi32(sr[t], wv[c], bcast8(bp[2 * (T0 + t) + 1].qs + 8 * c));
        }
      }
      for (int t = 0; t < N; ++t) {
        const __m512 d = bcast_pair(bp[2 * (T0 + t) + 1].d);
        __m512& a = acc[T0 + t];
        a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(combine_x2(sm[t], sr[t])), _mm512_mul_ps(dw, d), a);
      }
    };
    run(std::integral_constant<int, 0>{}, std::integral_constant<int, T / 2>{});
    run(std::integral_constant<int, T / 2>{}, std::integral_constant<int, T - T / 2>{});
  };
  over_block_pairs<T>(g, tile, tile_rows, first_row, nb, y, ys, valid, flags, step,
                      [&](const ActQ8* odd, __m256* chain) {
                        q8_0_block_x2<Avx512Vnni, T>(g[nb - 1], odd, 1, 0, chain);
                      });
}

// Q6_K (and Q3_K) over a tile of ActQ6WidePair rows: the pair's weights unpacked once for the
// call's T tokens; each token's sums start from the tile's offset starts, so its float steps are
// q6_pair_float_step's on the same integer sums as q6_pair_token's (the same bits).
template <int T, bool X2>
void q6_wide(const PackQ6_Kx8* g, const ActQ8* tile, int64_t tile_rows, int64_t first_row,
             int64_t nb, float* y, int64_t ys, int valid, unsigned flags) {
  constexpr int kRows = X2 ? 2 : 1;
  const auto* rows = reinterpret_cast<const ActQ6WidePair*>(tile) + first_row;
  __m512 acc[1][T];
  zero(acc);
  for (int64_t p = 0; p < nb / 2; ++p) {
    prefetch_pair<1>(g, nb, p, flags);
    const Q6PairWeights w = q6_pair_weights(g, 2 * p);
    const ActQ6WidePair* bp = rows + p * tile_rows;
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      const ActQ6WidePair& last = bp[kRows * t + kRows - 1];
      __m512i sl = bcast8(reinterpret_cast<const int8_t*>(last.start_lo));
      __m512i sh = bcast8(reinterpret_cast<const int8_t*>(last.start_hi));
      if constexpr (X2) {
        const int8_t* q = bp[2 * t].qs;
        __m512i ml = _mm512_setzero_si512(), mh = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          ml = _mm512_dpbusd_epi32(ml, w.wl[c], bcast8(q + 8 * c));
          mh = _mm512_dpbusd_epi32(mh, w.wh[c], bcast8(q + 32 + 8 * c));
        }
        sl = combine_x2(ml, sl);  // the residual's products add on below
        sh = combine_x2(mh, sh);
      }
      const int8_t* q = last.qs;
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        sl = _mm512_dpbusd_epi32(sl, w.wl[c], bcast8(q + 8 * c));
        sh = _mm512_dpbusd_epi32(sh, w.wh[c], bcast8(q + 32 + 8 * c));
      }
      acc[0][t] = q6_pair_float_step<PackQ6_Kx8>(w, sl, sh, _mm512_setzero_si512(),
                                                 bcast_pair(last.d), acc[0][t]);
    }
  }
  // nb is a multiple of 8: no last odd block.
  finish_groups(acc, nb, y, ys, valid, [](int, __m256*) {});
}

template <bool X2>
void q6_wide_group(const void* gv, const ActQ8* tile, int64_t tile_rows, int64_t first_row,
                   int64_t nb, int R, float* y, int64_t ys, int valid, unsigned flags) {
  dispatch_count<kMinWideTokens, kMaxWideTokens>(X2 ? R / 2 : R, [&](auto t) {
    q6_wide<decltype(t)::value, X2>(static_cast<const PackQ6_Kx8*>(gv), tile, tile_rows, first_row,
                                    nb, y, ys, valid, flags);
  });
}

// R rows: R / 2 q8x2 tokens with X2, else R single-pass rows.
template <typename P, bool X2>
void q4_wide_group(const void* gv, const ActQ8* tile, int64_t tile_rows, int64_t first_row,
                   int64_t nb, int R, float* y, int64_t ys, int valid, unsigned flags) {
  dispatch_count<kMinWideTokens, kMaxWideTokens>(X2 ? R / 2 : R, [&](auto t) {
    q4_wide<P, decltype(t)::value, X2>(static_cast<const P*>(gv), tile, tile_rows, first_row, nb, y,
                                       ys, valid, flags);
  });
}

void q8_0_wide_group(const void* gv, const ActQ8* tile, int64_t tile_rows, int64_t first_row,
                     int64_t nb, int R, float* y, int64_t ys, int valid, unsigned flags) {
  dispatch_count<kMinWideTokens, kMaxWideTokens>(R / 2, [&](auto t) {
    q8_0_wide_x2<decltype(t)::value>(static_cast<const PackQ8_0x8*>(gv), tile, tile_rows, first_row,
                                     nb, y, ys, valid, flags);
  });
}

}  // namespace

void add_wide_kernels_avx512_vnni(PackedKernels& k) {
  k.wide[kPackQ4_0] = &q4_wide_group<PackQ4_0x8, true>;
  k.wide[kPackQ4_1] = &q4_wide_group<PackQ4_1x8, true>;
  k.wide[kPackQ8_0] = &q8_0_wide_group;
  k.wide[kPackQ4_K] = &q4_wide_group<PackQ4_Kx8, true>;
  k.wide[kPackQ5_K] = &q4_wide_group<PackQ5_Kx8, true>;
  // Single-pass rows: only Q5_K, whose fifth bits make the unpack worth sharing by 8-16 rows
  // (1.7B prefill in one pass 115 -> 135 tok/s); for Q4_0 the pair kernels' two groups per call
  // are faster (170 against 150) and Q4_K is even (bench/RESULTS.md, "Real model sizes").
  k.wide_x1[kPackQ5_K] = &q4_wide_group<PackQ5_Kx8, false>;
  k.wide[kPackQ6_K] = &q6_wide_group<true>;
  k.wide_x1[kPackQ6_K] = &q6_wide_group<false>;
  k.min_tokens_wide = kMinWideTokens;
  k.max_tokens_wide = kMaxWideTokens;
}

}  // namespace llmserve::kernels::cpu
