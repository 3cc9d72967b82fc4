// Reference (scalar) conversion of stored weights to f32, and half / bfloat16 helpers.
// This is the oracle the fast kernels are tested against; correctness over speed.
#pragma once

#include <cstdint>

#include "llmserve/kernels/dtype.h"

namespace llmserve::kernels {

float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);  // round to nearest even; overflow -> inf, NaN stays NaN
float bf16_to_fp32(uint16_t b);
uint16_t fp32_to_bf16(float f);  // round to nearest even; NaN stays NaN

// True for F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K..Q8_K.
bool dtype_can_dequantize(DType type);

// Decodes n elements (row_bytes(type, n) bytes at src) into dst[n].
// Preconditions: dtype_can_dequantize(type), n % dtype_info(type).block_elems == 0.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

}  // namespace llmserve::kernels
