// The AVX2 single-pass K-quant kernels for many rows (PackedKernels::rows_many), in their own file:
// beside the 4-row kernels of packed_gemm_avx2.cpp, GCC's inlining there changed and single-row
// decode ran 1.4x slower.
#include <type_traits>
#include <vector>

#include "kernels/cpu/packed_avx2_isa.h"

namespace llmserve::kernels::cpu {
namespace {

// Single-pass rows of the K-quants over many activation rows: each weight block unpacked once per
// call into a per-thread scratch (the 8 chunk vectors and the float scales), then the 4-row
// kernels' operations per slice of 4 rows read it from there. Unpacking a Q5_K or Q6_K block costs
// as much as 1-2 rows' products on AVX2, so sharing it by 4 rows only left prefill behind. The
// same integer sums and float steps as q4_block / q6_block_avx2: the same bits.
struct UnpackedBlock {
  __m256i w[8];   // chunk c: w[2c] low nibbles (elements 4c..4c+3), w[2c + 1] high (16 + 4c..)
  __m256 s0, s1;  // Q4_K / Q5_K: dw, mw; Q6_K: d sc_lo, d sc_hi
};

template <typename P>
void unpack_block(const P* g, int64_t i, UnpackedBlock& u) {
  if constexpr (std::is_same_v<P, PackQ6_Kx8>) {
    const P& s = g[i / kSubBlocks];
    const int64_t j = i % kSubBlocks;
    const __m256i hl = load_qh(s, j, 0), hh = load_qh(s, j, 1);
    for (int c = 0; c < 4; ++c) q6_chunk(s, j, c, hl, hh, u.w[2 * c], u.w[2 * c + 1]);
    const Q6Scales q = q6_scales(s, j);
    u.s0 = q.lo;
    u.s1 = q.hi;
  } else {
    for (int c = 0; c < 4; ++c) q4_chunk<Avx2>(g, i, c, u.w[2 * c], u.w[2 * c + 1]);
    q4_scales(g, i, u.s0, u.s1);
  }
}

// q4_block's operations on an unpacked block.
template <typename P, int R>
__attribute__((always_inline)) inline void q4_block_unpacked(const UnpackedBlock& u, const ActQ8* x,
                                                             int64_t nb, int64_t b, __m256* chain) {
  q4_rows_block<Avx2, P, R>(
      [&](int c, __m256i& wl, __m256i& wh) __attribute__((always_inline)) {
        wl = _mm256_load_si256(&u.w[2 * c]);
        wh = _mm256_load_si256(&u.w[2 * c + 1]);
      },
      [&](__m256 & dw, __m256 & mw) __attribute__((always_inline)) {
        dw = u.s0;
        mw = u.s1;
      },
      x, nb, b, chain);
}

// q6_block_avx2's operations on an unpacked block.
template <int R>
__attribute__((always_inline)) inline void q6_block_unpacked(const UnpackedBlock& u, const ActQ8* x,
                                                             int64_t nb, int64_t b, __m256* chain) {
  q6_rows_avx2<R>(
      [&](int c, __m256i& wl0, __m256i& wh0, __m256i& wl1, __m256i& wh1)
          __attribute__((always_inline)) {
            wl0 = _mm256_load_si256(&u.w[2 * c]);
            wh0 = _mm256_load_si256(&u.w[2 * c + 1]);
            wl1 = _mm256_load_si256(&u.w[2 * c + 2]);
            wh1 = _mm256_load_si256(&u.w[2 * c + 3]);
          },
      [&]() __attribute__((always_inline)) {
        Q6Scales q;
        q.lo = u.s0;
        q.hi = u.s1;
        return q;
      },
      x, nb, b, chain);
}

constexpr int kRowsPerSlice = 4;
// Rows per call for the unpacked kernels: the driver's 64-row tiles in one call.
constexpr int kUnpackedMaxRows = 64;

// Single-pass rows of P (any R) through the scratch.
template <typename P>
void unpacked_rows(const void* gv, const ActQ8* x, int64_t nb, int R, float* y, int64_t ys,
                   int valid, unsigned flags) {
  const auto* g = static_cast<const P*>(gv);
  thread_local std::vector<UnpackedBlock> scratch;
  if (static_cast<int64_t>(scratch.size()) < nb) scratch.resize(static_cast<size_t>(nb));
  for (int64_t b = 0; b < nb; ++b) {
    if (flags & kPrefetchWeights) prefetch_block(g, b);
    unpack_block(g, b, scratch[static_cast<size_t>(b)]);
  }
  const UnpackedBlock* u = scratch.data();
  for (int r0 = 0; r0 < R; r0 += kRowsPerSlice) {
    const int n = R - r0 < kRowsPerSlice ? R - r0 : kRowsPerSlice;
    const ActQ8* xs = x + r0 * nb;
    dispatch_count<1, kRowsPerSlice>(n, [&](auto r) {
      constexpr int Rc = decltype(r)::value;
      even_odd_rows<Rc>(
          g, nb,
          [&](int64_t b, __m256* chain) {
            if constexpr (std::is_same_v<P, PackQ6_Kx8>) {
              q6_block_unpacked<Rc>(u[b], xs, nb, b, chain);
            } else {
              q4_block_unpacked<P, Rc>(u[b], xs, nb, b, chain);
            }
          },
          y + r0 * ys, ys, valid, flags & ~kPrefetchWeights);
    });
  }
}

}  // namespace

void add_unpacked_kernels_avx2(PackedKernels& k) {
  k.rows_many[kPackQ4_K] = &unpacked_rows<PackQ4_Kx8>;
  k.rows_many[kPackQ5_K] = &unpacked_rows<PackQ5_Kx8>;
  k.rows_many[kPackQ6_K] = &unpacked_rows<PackQ6_Kx8>;
  k.max_rows_many = kUnpackedMaxRows;
}

}  // namespace llmserve::kernels::cpu
