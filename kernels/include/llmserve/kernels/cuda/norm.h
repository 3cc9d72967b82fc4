// CUDA RMSNorm over rows (twin of llmserve/kernels/norm.h): y = x / sqrt(mean(x^2) + eps) * w.
// Device pointers; x and residual [rows, dim] f32, weight[dim] f32. y is the next GEMM's input:
// bf16 rows (uint16_t bits, round to nearest even) of y_stride elements each (the CUDA backend
// passes 2 x dim, the f32 row pitch, so y may share x's memory).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmserve::kernels::cuda {

// y may share x's memory when y_stride == 2 * dim.
cudaError_t rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                     uint16_t* y, int64_t y_stride, cudaStream_t stream);

// residual += x; y = rms_norm(residual) * weight. y may share x's memory, not residual's.
cudaError_t add_rms_norm(float* residual, const float* x, const float* weight, int64_t rows,
                         int64_t dim, float eps, uint16_t* y, int64_t y_stride,
                         cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
