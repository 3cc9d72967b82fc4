#include "cuda_common.cuh"
#include "llmserve/kernels/cuda/model_variants.h"

namespace llmserve::kernels::cuda {
namespace {

constexpr int kWarps = 4;  // head rows per block of head_rms_norm

// One warp per (row, head): sum of squares by warp shuffle, then the scaled write in place.
__global__ void head_rms_norm_kernel(float* x, int64_t row_stride, int64_t n_heads_total, int heads,
                                     int head_dim, const float* w, float eps) {
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (item >= n_heads_total) return;
  const int lane = threadIdx.x % 32;
  float* v = x + (item / heads) * row_stride + (item % heads) * static_cast<int64_t>(head_dim);
  float ss = 0.0f;
  for (int i = lane; i < head_dim; i += 32) ss += v[i] * v[i];
  ss = detail::warp_sum(ss);
  const float inv = rsqrtf(ss / static_cast<float>(head_dim) + eps);
  for (int i = lane; i < head_dim; i += 32) v[i] = v[i] * inv * w[i];
}

constexpr int kThreads = 256;

__global__ void add_normed_kernel(float* residual, const float* x, const float* w, int64_t dim,
                                  float eps) {
  __shared__ float scratch[kThreads / 32];
  const int64_t base = blockIdx.x * dim;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) ss += x[base + i] * x[base + i];
  ss = detail::warp_sum(ss);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0.0f;
  for (int i = 0; i < kThreads / 32; ++i) total += scratch[i];
  const float inv = rsqrtf(total / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += kThreads)
    residual[base + i] += x[base + i] * inv * w[i];
}

__global__ void scale_kernel(float* x, int64_t n, float s) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] *= s;
  }
}

__global__ void softcap_kernel(float* x, int64_t n, float cap) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] = cap * tanhf(x[i] / cap);
  }
}

// As silu_mul_kernel (elementwise.cu): passes of blockDim elements, reads before writes.
__global__ void gelu_tanh_mul_kernel(SiluMulArgs a) {
  const int64_t r = blockIdx.x;
  const float* g = a.gate + r * a.gate_stride;
  const float* u = a.up + r * a.up_stride;
  __nv_bfloat16* out = reinterpret_cast<__nv_bfloat16*>(a.out) + r * a.out_stride;
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t c0 = 0; c0 < a.cols; c0 += blockDim.x) {
    const int64_t c = c0 + threadIdx.x;
    float v = 0.0f;
    if (c < a.cols) {
      const float z = g[c];
      v = 0.5f * z * (1.0f + tanhf(kSqrt2OverPi * (z + 0.044715f * z * z * z))) * u[c];
    }
    __syncthreads();
    if (c < a.cols) out[c] = __float2bfloat16_rn(v);
  }
}

}  // namespace

cudaError_t head_rms_norm(float* x, int64_t row_stride, int64_t rows, int heads, int head_dim,
                          const float* w, float eps, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  if (heads <= 0 || head_dim <= 0 || row_stride < static_cast<int64_t>(heads) * head_dim) {
    return cudaErrorInvalidValue;
  }
  const int64_t n = rows * heads;
  head_rms_norm_kernel<<<static_cast<unsigned>((n + kWarps - 1) / kWarps), kWarps * 32, 0,
                         stream>>>(x, row_stride, n, heads, head_dim, w, eps);
  return cudaGetLastError();
}

cudaError_t add_normed(float* residual, const float* x, const float* w, int64_t rows, int64_t dim,
                       float eps, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  if (dim <= 0) return cudaErrorInvalidValue;
  add_normed_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(residual, x, w, dim, eps);
  return cudaGetLastError();
}

cudaError_t scale(float* x, int64_t n, float s, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  scale_kernel<<<detail::grid_for(n, 256), 256, 0, stream>>>(x, n, s);
  return cudaGetLastError();
}

cudaError_t softcap(float* x, int64_t n, float cap, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (!(cap > 0.0f)) return cudaErrorInvalidValue;
  softcap_kernel<<<detail::grid_for(n, 256), 256, 0, stream>>>(x, n, cap);
  return cudaGetLastError();
}

cudaError_t gelu_tanh_mul(const SiluMulArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.cols <= 0) return cudaSuccess;
  if (args.gate_stride < args.cols || args.up_stride < args.cols || args.out_stride < args.cols) {
    return cudaErrorInvalidValue;
  }
  gelu_tanh_mul_kernel<<<static_cast<unsigned>(args.rows), 512, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace llmserve::kernels::cuda
