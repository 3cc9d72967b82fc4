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

// k % 32 == 0; writes k / 32 blocks.
void quantize_row_act_q8(const float* x, int64_t k, ActQ8* out);
// k % 256 == 0; writes k / 256 blocks (d, qs, bsums of each 16).
void quantize_row_act_q8k(const float* x, int64_t k, BlockQ8_K* out);

// Two-pass forms: main ~= x, then res ~= x - main (both k / 32 or k / 256 blocks).
void quantize_row_act_q8x2(const float* x, int64_t k, ActQ8* main, ActQ8* res);
void quantize_row_act_q8kx2(const float* x, int64_t k, BlockQ8_K* main, BlockQ8_K* res);

}  // namespace llmserve::kernels::cpu
