// CUDA RMSNorm over rows (twin of llmserve/kernels/norm.h): y = x / sqrt(mean(x^2) + eps) * w.
// Device pointers; x, y, residual [rows, dim] f32, weight[dim] f32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmserve::kernels::cuda {

// y may equal x.
cudaError_t rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                     float* y, cudaStream_t stream);

// residual += x; y = rms_norm(residual) * weight. y may equal x, not residual.
cudaError_t add_rms_norm(float* residual, const float* x, const float* weight, int64_t rows,
                         int64_t dim, float eps, float* y, cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
