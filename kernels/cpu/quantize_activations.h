// Internal: 8-bit quantization of f32 activation rows for the integer dot products of matmul.
#pragma once

#include <cstdint>

#include "llmserve/kernels/quant_blocks.h"

namespace llmserve::kernels::cpu {

// x[j] ~= d * qs[j] over 32 elements; ds = d * sum(qs).
struct ActQ8 {
  float d;
  float ds;
  int8_t qs[kQK];
};
static_assert(sizeof(ActQ8) == 40);

// Two consecutive ActQ8 blocks (b even, b + 1) re-laid for 512-bit kernels that hold both blocks
// in one vector, lanes alternating: qs[8c .. 8c+3] = block b's qs[4c .. 4c+3], qs[8c+4 .. 8c+7] =
// block b+1's, so one 64-bit broadcast feeds both. Same size as the two blocks. For Q8_0 weights
// (no min term, so no ds) the ds slots hold instead the int32 -128 * sum(qs) of each block: those
// kernels take the weights as unsigned bytes w + 128 and start each dot product from it.
struct ActQ8Pair {
  float d[2];
  union {
    float ds[2];
    int32_t q8_0_correction[2];
  };
  int8_t qs[2 * kQK];
};
static_assert(sizeof(ActQ8Pair) == 2 * sizeof(ActQ8));

// In place, for each of `rows` rows of nb blocks: blocks (2p, 2p + 1) become ActQ8Pair p; with nb
// odd the last block of each row stays an ActQ8. q8_0_correction: fill those instead of ds.
void pair_act_blocks(ActQ8* x, int64_t rows, int64_t nb, bool q8_0_correction = false);
// The same pairs from one row of nb blocks, written to dst[p * stride] (the row's last block, nb
// odd, is not written).
void pair_act_row_to(const ActQ8* row, int64_t nb, ActQ8Pair* dst, int64_t stride,
                     bool q8_0_correction = false);

// A block pair of Q6_K activations in the wide layout: qs as ActQ8Pair's, and each half block's
// integer sum start, -32 times its activations' sum (so the kernels' sums come out as
// sum x * (q - 32) with no further step). A q8x2 token's main row keeps d and starts of zero; its
// residual row starts from -32 * (256 S_main + S_res) (packed_matmul's q6 re-lay).
struct ActQ6WidePair {
  float d[2];
  int32_t start_lo[2], start_hi[2];
  int8_t qs[2 * kQK];
};
// Row of nb blocks (nb even, ds slots holding half sums) to dst[p * stride], p < nb / 2; with
// residual (the q8x2 token's second row, also with half sums), main is written from row and
// residual from residual, the residual's starts combining both.
void q6_row_to_wide(const ActQ8* row, int64_t nb, ActQ6WidePair* dst, int64_t stride);
void q6_token_to_wide(const ActQ8* main, const ActQ8* residual, int64_t nb, ActQ6WidePair* dst,
                      int64_t stride);

// For the Q6_K kernels: each of the n blocks' ds becomes the int16 pair (sum of qs[0..15], sum of
// qs[16..31]).
void store_half_sums(ActQ8* x, int64_t n);

// k % 32 == 0; writes k / 32 blocks.
void quantize_row_act_q8(const float* x, int64_t k, ActQ8* out);
// k % 256 == 0; writes k / 256 blocks (d, qs, bsums of each 16).
void quantize_row_act_q8k(const float* x, int64_t k, BlockQ8_K* out);

// Two-pass forms: main ~= x, then res ~= x - main (both k / 32 or k / 256 blocks). In q8x2 each
// residual block's scale is its main block's / kQ8x2ResidualRatio (|x - main| <= main.d / 2, so
// res.qs spans [-127, 127] up to clamping), which lets kernels add main.qs * 256 + res.qs in
// integers.
inline constexpr int kQ8x2ResidualRatio = 256;
void quantize_row_act_q8x2(const float* x, int64_t k, ActQ8* main, ActQ8* res);
void quantize_row_act_q8kx2(const float* x, int64_t k, BlockQ8_K* main, BlockQ8_K* res);

// For the two-pass form: y[m / 2][n] = pairs[m][n] + pairs[m + 1][n] over even m in [m0, m1) and
// n in [n0, n1); pairs and y are row-major with N columns.
inline void sum_row_pairs(const float* pairs, int64_t N, int64_t m0, int64_t m1, int64_t n0,
                          int64_t n1, float* y) {
  for (int64_t m = m0; m < m1; m += 2) {
    const float* a = pairs + m * N;
    float* dst = y + (m / 2) * N;
    for (int64_t n = n0; n < n1; ++n) dst[n] = a[n] + a[N + n];
  }
}

}  // namespace llmserve::kernels::cpu
