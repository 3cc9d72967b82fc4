// CUDA twin of llmserve/kernels/hadamard.h: the orthonormal Walsh-Hadamard transform of every
// head row of x[T, heads, head_dim] f32 in place (row t at x + t * row_stride floats), with the
// CPU's butterfly order, so both give the same bits. Precondition: head_dim a power of two.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmserve::kernels::cuda {

cudaError_t hadamard_rows(float* x, int64_t row_stride, int64_t T, int heads, int head_dim,
                          cudaStream_t stream);

// The same on bf16 rows (uint16_t bit patterns; row t at x + t * row_stride elements), as the
// attention ops write their output: each row read to f32, rotated as above, rounded back to bf16.
cudaError_t hadamard_rows_bf16(uint16_t* x, int64_t row_stride, int64_t T, int heads,
                               int head_dim, cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
