// Quantization of weight rows into GGML blocks (quant_blocks.h), the inverse of dequantize_row:
// what model.quantize applies at load to F32 / F16 / BF16 matrices.
//   Q8_0: per 32, d = max|x| / 127, q = round(x / d); bit-identical to ggml's reference.
//   Q4_0: per 32, d = (the x of largest magnitude) / -8, q = min(15, trunc(x / d + 8.5)) - 8;
//         bit-identical to ggml's reference.
//   Q4_K: per 256, eight sub-blocks of 32 with x ~ d * sc * q - dmin * m, q in [0, 15], sc and m
//         6-bit, d and dmin f16. Each sub-block's (scale, min) comes from a least-squares search
//         over candidate step sizes; the 6-bit codes are then refined (each code +-1, keeping the
//         least squared error after re-rounding the quants). Its error is at most llama.cpp's
//         reference quantizer's (tests/unit/kernels/quantize_weights_test.cpp).
#pragma once

#include <cstdint>

#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/quant_blocks.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::kernels {

// Q8_0, Q4_0 and Q4_K: the types quantize_row writes.
bool can_quantize_to(DType target);
// A row of K elements quantizes to `target`: can_quantize_to(target), K > 0 and K a multiple of
// its block (32; 256 for Q4_K).
bool can_quantize_row(DType target, int64_t K);

// n elements (n % 32 == 0, or % 256 for Q4_K) of x into n / block consecutive blocks.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n);
void quantize_row_q4_k(const float* x, BlockQ4_K* y, int64_t n);

// Dispatch: row_bytes(target, n) bytes at dst. Precondition: can_quantize_row(target, n).
void quantize_row(DType target, const float* x, void* dst, int64_t n);

// W[N, K] stored as src_type (any type dequantize_row reads) -> N rows of row_bytes(target, K)
// bytes at dst, rows split over the pool. Preconditions: can_quantize_row(target, K),
// dtype_can_dequantize(src_type) and K a multiple of src_type's block.
void quantize_matrix(ThreadPool& pool, DType src_type, const void* src, DType target, void* dst,
                     int64_t N, int64_t K);

}  // namespace llmserve::kernels
