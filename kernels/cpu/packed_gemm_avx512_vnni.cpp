// Packed micro-kernels with AVX-512 VNNI (vpdpbusd: 4 byte products summed straight into 32 bits):
// the 256-bit kernels of packed_gemm_impl.h, and 512-bit kernels (Q4_0, Q4_1, Q8_0) that hold two
// group blocks per vector (lane 2j: block b, row j; lane 2j + 1: block b + 1, row j) against
// activations re-laid by pair_act_blocks, halving the instructions per product. Their float
// chains (even blocks, odd blocks) are the 256-bit kernels', so results match bit for bit. The
// _x2 kernels are the q8x2 forms (see q4_block_x2).
// Everything in this file is built for that target and has internal linkage, so nothing here
// leaks into code run on CPUs without it. The target flags are set on this file alone in
// kernels/CMakeLists.txt (GCC and clang alike).
#include "kernels/cpu/avx512_intrinsics.h"

#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/packed_layout.h"
#include "kernels/cpu/quantize_activations.h"

#include "kernels/cpu/packed_gemm_impl.h"

namespace llmserve::kernels::cpu {
namespace {

struct Avx512Vnni {
  using Acc4 = __m256i;
  static __m256i zero4() { return _mm256_setzero_si256(); }
  static __m256i dot_u4(__m256i s, __m256i w, __m256i x) { return _mm256_dpbusd_epi32(s, w, x); }
  static __m256i sum4(__m256i s) { return s; }
  static __m256i dot_s8(__m256i s, __m256i aw, __m256i xs) {
    return _mm256_dpbusd_epi32(s, aw, xs);
  }
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
    prefetch_block(g + w * nb + 2 * p);
    prefetch_block(g + w * nb + 2 * p + 1);
  }
}

// Chunk c of the pair's 4-bit quants: low and high nibbles as bytes.
template <int W, typename P>
__attribute__((always_inline)) inline void q4_pair_chunk(const P* g, int64_t nb, int64_t p, int c,
                                                         __m512i* wl, __m512i* wh) {
  const __m512i lo = _mm512_set1_epi8(0x0F);
  for (int w = 0; w < W; ++w) {
    const __m512i v = alternate(g[w * nb + 2 * p].qs + 32 * c, g[w * nb + 2 * p + 1].qs + 32 * c);
    wl[w] = _mm512_and_si512(v, lo);
    wh[w] = _mm512_and_si512(_mm512_srli_epi16(v, 4), lo);
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
    const P& b0 = g[w * nb + 2 * p];
    const P& b1 = g[w * nb + 2 * p + 1];
    const __m256 dw0 = load_halves(b0.d), dw1 = load_halves(b1.d);
    dw[w] = alternate(dw0, dw1);
    mw[w] = alternate(q4_min_term(b0, dw0), q4_min_term(b1, dw1));
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
    q4_block<Avx512Vnni, P, R>(g[w * nb + nb - 1], x, nb, nb - 1, chain);
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
    q4_block_x2<Avx512Vnni, P, T>(g[w * nb + nb - 1], x, nb, nb - 1, chain);
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
    k.q4_0_pairs = &q4_pair_group<PackQ4_0x8, kMaxPairRows, kMaxPairTokensX2>;
    k.q4_1_pairs = &q4_pair_group<PackQ4_1x8, kMaxPairRows, kMaxPairTokensX2>;
    k.q8_0_pairs = &q8_0_pair_group<kMaxPairRows, kMaxPairTokensX2>;
    k.max_rows_pairs = kMaxPairRows;
    k.max_tokens_x2_pairs = kMaxPairTokensX2;
    // LLMSERVE_CPU_PAIR_GROUPS=1: one group per call, for side-by-side measurements.
    const char* groups = std::getenv("LLMSERVE_CPU_PAIR_GROUPS");
    k.pair_groups = groups != nullptr && std::strcmp(groups, "1") == 0 ? 1 : 2;
  }
  return k;
}

}  // namespace llmserve::kernels::cpu
