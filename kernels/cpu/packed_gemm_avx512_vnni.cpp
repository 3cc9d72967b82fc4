// Packed micro-kernels with AVX-512 VNNI (vpdpbusd: 4 byte products summed straight into 32 bits):
// the 256-bit kernels of packed_gemm_impl.h, and 512-bit kernels (Q4_0, Q4_1, Q8_0) that hold two
// group blocks per vector (lane 2j: block b, row j; lane 2j + 1: block b + 1, row j) against
// activations re-laid by pair_act_blocks, halving the instructions per product. Their float
// chains (even blocks, odd blocks) are the 256-bit kernels', so results match bit for bit.
// Everything in this file is built for that target and has internal linkage, so nothing here
// leaks into code run on CPUs without it. The target flags are set on this file alone in
// kernels/CMakeLists.txt (GCC and clang alike).
#include "kernels/cpu/avx512_intrinsics.h"

#include <cstring>

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
  for (int r = 0; r < R; ++r) {
    const __m512 sum = _mm512_add_ps(acc[r], _mm512_permute_ps(acc[r], 0xB1));
    store_rows(_mm512_castps512_ps256(_mm512_permutexvar_ps(evens, sum)), y + r * ys, valid);
  }
}

template <typename P, int R>
void q4_pair_rows(const P* g, const ActQ8* x, int64_t nb, float* y, int64_t ys, int valid) {
  const __m512i lo = _mm512_set1_epi8(0x0F);
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t np = nb / 2;
  for (int64_t p = 0; p < np; ++p) {
    const P& b0 = g[2 * p];
    const P& b1 = g[2 * p + 1];
    prefetch_block(g + 2 * p);
    prefetch_block(g + 2 * p + 1);
    __m512i s[R];
    for (int r = 0; r < R; ++r) s[r] = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      const __m512i v = alternate(b0.qs + 32 * c, b1.qs + 32 * c);
      const __m512i wl = _mm512_and_si512(v, lo);
      const __m512i wh = _mm512_and_si512(_mm512_srli_epi16(v, 4), lo);
      for (int r = 0; r < R; ++r) {
        const int8_t* q = reinterpret_cast<const ActQ8Pair*>(x + r * nb)[p].qs;
        s[r] = _mm512_dpbusd_epi32(s[r], wl, bcast8(q + 8 * c));
        s[r] = _mm512_dpbusd_epi32(s[r], wh, bcast8(q + 32 + 8 * c));
      }
    }
    const __m256 dw0 = load_halves(b0.d), dw1 = load_halves(b1.d);
    const __m512 dw = alternate(dw0, dw1);
    const __m512 mw = alternate(q4_min_term(b0, dw0), q4_min_term(b1, dw1));
    for (int r = 0; r < R; ++r) {
      const ActQ8Pair& a = reinterpret_cast<const ActQ8Pair*>(x + r * nb)[p];
      const __m512 sc = _mm512_mul_ps(dw, bcast_pair(a.d));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r]), sc, acc[r]);
      acc[r] = _mm512_fmadd_ps(mw, bcast_pair(a.ds), acc[r]);
    }
  }
  if (nb % 2 != 0) {
    last_block_into_even_lanes<R>(
        acc, [&](__m256* chain) { q4_block<Avx512Vnni, P, R>(g[nb - 1], x, nb, nb - 1, chain); });
  }
  store_pair_sums<R>(acc, y, ys, valid);
}

// Q8_0: weights as unsigned bytes w ^ 0x80 = w + 128; each dot product starts from the row's
// -128 * sum(x) (ActQ8Pair::q8_0_correction), so the integer sums are exact.
template <int R>
void q8_0_pair_rows(const PackQ8_0x8* g, const ActQ8* x, int64_t nb, float* y, int64_t ys,
                    int valid) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t np = nb / 2;
  for (int64_t p = 0; p < np; ++p) {
    const PackQ8_0x8& b0 = g[2 * p];
    const PackQ8_0x8& b1 = g[2 * p + 1];
    prefetch_block(g + 2 * p);
    prefetch_block(g + 2 * p + 1);
    __m512i s[R];
    for (int r = 0; r < R; ++r) {
      const int8_t* corr = reinterpret_cast<const int8_t*>(
          reinterpret_cast<const ActQ8Pair*>(x + r * nb)[p].q8_0_correction);
      s[r] = bcast8(corr);
    }
    for (int c = 0; c < 8; ++c) {
      const __m512i w = _mm512_xor_si512(alternate(b0.qs + 32 * c, b1.qs + 32 * c), flip);
      for (int r = 0; r < R; ++r) {
        const int8_t* q = reinterpret_cast<const ActQ8Pair*>(x + r * nb)[p].qs;
        s[r] = _mm512_dpbusd_epi32(s[r], w, bcast8(q + 8 * c));
      }
    }
    const __m512 dw = alternate(load_halves(b0.d), load_halves(b1.d));
    for (int r = 0; r < R; ++r) {
      const ActQ8Pair& a = reinterpret_cast<const ActQ8Pair*>(x + r * nb)[p];
      acc[r] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r]), _mm512_mul_ps(dw, bcast_pair(a.d)), acc[r]);
    }
  }
  if (nb % 2 != 0) {
    last_block_into_even_lanes<R>(
        acc, [&](__m256* chain) { q8_0_block<Avx512Vnni, R>(g[nb - 1], x, nb, nb - 1, chain); });
  }
  store_pair_sums<R>(acc, y, ys, valid);
}

template <int Rc, int MaxR>
void q8_0_pair_dispatch(const PackQ8_0x8* p, const ActQ8* x, int64_t nb, int R, float* y,
                        int64_t ys, int valid) {
  if constexpr (Rc < MaxR) {
    if (R != Rc) return q8_0_pair_dispatch<Rc + 1, MaxR>(p, x, nb, R, y, ys, valid);
  }
  q8_0_pair_rows<Rc>(p, x, nb, y, ys, valid);
}

template <int MaxR>
void q8_0_pair_group(const void* g, const ActQ8* x, int64_t nb, int R, float* y, int64_t ys,
                     int valid) {
  q8_0_pair_dispatch<1, MaxR>(static_cast<const PackQ8_0x8*>(g), x, nb, R, y, ys, valid);
}

template <typename P, int Rc, int MaxR>
void q4_pair_dispatch(const P* p, const ActQ8* x, int64_t nb, int R, float* y, int64_t ys,
                      int valid) {
  if constexpr (Rc < MaxR) {
    if (R != Rc) return q4_pair_dispatch<P, Rc + 1, MaxR>(p, x, nb, R, y, ys, valid);
  }
  q4_pair_rows<P, Rc>(p, x, nb, y, ys, valid);
}

template <typename P, int MaxR>
void q4_pair_group(const void* g, const ActQ8* x, int64_t nb, int R, float* y, int64_t ys,
                   int valid) {
  q4_pair_dispatch<P, 1, MaxR>(static_cast<const P*>(g), x, nb, R, y, ys, valid);
}

}  // namespace

PackedKernels packed_kernels_avx512_vnni(bool pairs) {
  PackedKernels k = make_packed_kernels<Avx512Vnni, 8>();
  if (pairs) {
    constexpr int kMaxPairRows = 8;
    k.q4_0_pairs = &q4_pair_group<PackQ4_0x8, kMaxPairRows>;
    k.q4_1_pairs = &q4_pair_group<PackQ4_1x8, kMaxPairRows>;
    k.q8_0_pairs = &q8_0_pair_group<kMaxPairRows>;
    k.max_rows_pairs = kMaxPairRows;
  }
  return k;
}

}  // namespace llmserve::kernels::cpu
