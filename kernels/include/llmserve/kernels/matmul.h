// Matrix product of f32 activations by weights kept in their stored type.
#pragma once

#include <cstdint>

#include "llmserve/kernels/act_precision.h"
#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::kernels {

// True for the weight types matmul accepts: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K (Q5_*, Q2_K, Q3_K, Q5_K through a dequantize-one-row fallback).
bool matmul_supports(DType w_type);

// y[M, N] = x[M, K] . W[N, K]^T. W is N rows of row_bytes(w_type, K) bytes each.
// Preconditions: matmul_supports(w_type); K % block_elems(w_type) == 0 (and K % 256 == 0 for
// K-quants); y does not alias x. Quantized weights use activations quantized per block (per 32 or
// per 256 for K-quants) inside the call, in one or two 8-bit passes (act_precision.h). Each y row
// depends only on its own x row: results are bit-identical whatever M or the other rows are.
void matmul(ThreadPool& pool, const float* x, int64_t M, int64_t K, DType w_type, const void* w,
            int64_t N, float* y, ActPrecision precision = ActPrecision::kQ8x2);

}  // namespace llmserve::kernels
