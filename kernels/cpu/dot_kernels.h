// Internal: per-weight-type dot products of one weight row with up to kMaxRows activation rows.
// Each activation row's result follows the same arithmetic whatever the row count R.
#pragma once

#include <cstddef>
#include <cstdint>

#include "llmserve/kernels/dtype.h"

namespace llmserve::kernels::cpu {

inline constexpr int kMaxRows = 4;

enum class ActFormat { kF32, kQ8, kQ8K };

// out[r * out_stride] = W_row . x_r for r < R; x_r = x_rows + r * x_stride bytes, in the
// activation format of the weight type.
using RowDotFn = void (*)(const void* w_row, const void* x_rows, size_t x_stride, int R, int64_t K,
                          float* out, int64_t out_stride);

struct DotKernel {
  ActFormat act;
  RowDotFn fn;
};

// nullptr fn when the type is not supported.
DotKernel dot_kernel_for(DType w_type);

void dot_rows_q4_0(const void*, const void*, size_t, int, int64_t, float*, int64_t);
void dot_rows_q4_1(const void*, const void*, size_t, int, int64_t, float*, int64_t);
void dot_rows_q8_0(const void*, const void*, size_t, int, int64_t, float*, int64_t);
void dot_rows_q4_k(const void*, const void*, size_t, int, int64_t, float*, int64_t);
void dot_rows_q5_k(const void*, const void*, size_t, int, int64_t, float*, int64_t);
void dot_rows_q6_k(const void*, const void*, size_t, int, int64_t, float*, int64_t);
void dot_rows_f32(const void*, const void*, size_t, int, int64_t, float*, int64_t);
void dot_rows_f16(const void*, const void*, size_t, int, int64_t, float*, int64_t);
void dot_rows_bf16(const void*, const void*, size_t, int, int64_t, float*, int64_t);
// Dequantizes the weight row (any dequantizable type) and dots it in f32.
template <DType T>
void dot_rows_dequant(const void*, const void*, size_t, int, int64_t, float*, int64_t);

}  // namespace llmserve::kernels::cpu
