#include "cuda_common.cuh"
#include "llmserve/kernels/cuda/norm.h"

namespace llmserve::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// Sum over the block; every thread gets the result.
__device__ float block_sum(float v, float* scratch) {
  v = detail::warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float s = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) s += scratch[w];
  __syncthreads();
  return s;
}

// One block per row. With residual != nullptr: residual += x first, and the norm reads it.
// The bf16 output may overlay the f32 input row (y_stride == 2 * dim): each pass of kThreads
// elements reads all its inputs before any thread writes, and the bf16 bytes written by pass p
// cover only f32 elements of passes <= p.
__global__ void rms_norm_kernel(float* residual, const float* x, const float* weight, int64_t dim,
                                float eps, __nv_bfloat16* y, int64_t y_stride) {
  __shared__ float scratch[kThreads / 32];
  const int64_t base = blockIdx.x * dim;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    float v = x[base + i];
    if (residual != nullptr) {
      v += residual[base + i];
      residual[base + i] = v;
    }
    ss += v * v;
  }
  const float total = block_sum(ss, scratch);
  const float inv = rsqrtf(total / static_cast<float>(dim) + eps);
  const float* src = residual != nullptr ? residual : x;
  __nv_bfloat16* out = y + blockIdx.x * y_stride;
  for (int64_t i0 = 0; i0 < dim; i0 += kThreads) {
    const int64_t i = i0 + threadIdx.x;
    const float v = i < dim ? src[base + i] * inv * weight[i] : 0.0f;
    __syncthreads();
    if (i < dim) out[i] = __float2bfloat16_rn(v);
  }
}

cudaError_t launch(float* residual, const float* x, const float* weight, int64_t rows, int64_t dim,
                   float eps, uint16_t* y, int64_t y_stride, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  if (dim <= 0 || y_stride < dim) return cudaErrorInvalidValue;
  rms_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      residual, x, weight, dim, eps, reinterpret_cast<__nv_bfloat16*>(y), y_stride);
  return cudaGetLastError();
}

}  // namespace

cudaError_t rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                     uint16_t* y, int64_t y_stride, cudaStream_t stream) {
  return launch(nullptr, x, weight, rows, dim, eps, y, y_stride, stream);
}

cudaError_t add_rms_norm(float* residual, const float* x, const float* weight, int64_t rows,
                         int64_t dim, float eps, uint16_t* y, int64_t y_stride,
                         cudaStream_t stream) {
  return launch(residual, x, weight, rows, dim, eps, y, y_stride, stream);
}

}  // namespace llmserve::kernels::cuda
