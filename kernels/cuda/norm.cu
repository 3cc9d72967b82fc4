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
__global__ void rms_norm_kernel(float* residual, const float* x, const float* weight, int64_t dim,
                                float eps, float* y) {
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
  for (int64_t i = threadIdx.x; i < dim; i += kThreads)
    y[base + i] = src[base + i] * inv * weight[i];
}

}  // namespace

cudaError_t rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                     float* y, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  rms_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(nullptr, x, weight, dim,
                                                                        eps, y);
  return cudaGetLastError();
}

cudaError_t add_rms_norm(float* residual, const float* x, const float* weight, int64_t rows,
                         int64_t dim, float eps, float* y, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  rms_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(residual, x, weight, dim,
                                                                        eps, y);
  return cudaGetLastError();
}

}  // namespace llmserve::kernels::cuda
