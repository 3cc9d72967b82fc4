#include "cuda_common.cuh"
#include "llmserve/kernels/cuda/elementwise.h"

namespace llmserve::kernels::cuda {
namespace {

using detail::bf16_bits_to_f32;

__global__ void embedding_kernel(const uint16_t* table, int64_t dim, const int32_t* ids,
                                 float* out) {
  const int64_t t = blockIdx.x;
  const uint16_t* row = table + static_cast<int64_t>(ids[t]) * dim;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x)
    out[t * dim + i] = bf16_bits_to_f32(row[i]);
}

// One block per row, in passes of blockDim elements: every thread reads its inputs before any
// writes (out may overlay an input row: pass p writes bytes that hold f32 elements of passes <= p).
__global__ void silu_mul_kernel(SiluMulArgs a) {
  const int64_t r = blockIdx.x;
  const float* g = a.gate + r * a.gate_stride;
  const float* u = a.up + r * a.up_stride;
  __nv_bfloat16* out = reinterpret_cast<__nv_bfloat16*>(a.out) + r * a.out_stride;
  for (int64_t c0 = 0; c0 < a.cols; c0 += blockDim.x) {
    const int64_t c = c0 + threadIdx.x;
    float v = 0.0f;
    if (c < a.cols) {
      const float x = g[c];
      v = x / (1.0f + expf(-x)) * u[c];
    }
    __syncthreads();
    if (c < a.cols) out[c] = __float2bfloat16_rn(v);
  }
}

__global__ void gather_rows_kernel(const float* x, int64_t dim, const int32_t* rows, float* out) {
  const int64_t r = blockIdx.x;
  const float* src = x + static_cast<int64_t>(rows[r]) * dim;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) out[r * dim + i] = src[i];
}

__global__ void f32_to_bf16_kernel(const float* x, int64_t n, __nv_bfloat16* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = __float2bfloat16_rn(x[i]);
  }
}

__global__ void add_bias_kernel(float* y, const float* bias, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] += bias[i % cols];
  }
}

}  // namespace

cudaError_t embedding_bf16(const uint16_t* table, int64_t dim, const int32_t* ids, int64_t T,
                           float* out, cudaStream_t stream) {
  if (T <= 0) return cudaSuccess;
  embedding_kernel<<<static_cast<unsigned>(T), 256, 0, stream>>>(table, dim, ids, out);
  return cudaGetLastError();
}

cudaError_t silu_mul(const SiluMulArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.cols <= 0) return cudaSuccess;
  if (args.gate_stride < args.cols || args.up_stride < args.cols || args.out_stride < args.cols) {
    return cudaErrorInvalidValue;
  }
  silu_mul_kernel<<<static_cast<unsigned>(args.rows), 512, 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t gather_rows(const float* x, int64_t dim, const int32_t* rows, int64_t n, float* out,
                        cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  gather_rows_kernel<<<static_cast<unsigned>(n), 256, 0, stream>>>(x, dim, rows, out);
  return cudaGetLastError();
}

cudaError_t f32_to_bf16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  f32_to_bf16_kernel<<<detail::grid_for(n, 256), 256, 0, stream>>>(
      x, n, reinterpret_cast<__nv_bfloat16*>(out));
  return cudaGetLastError();
}

cudaError_t add_bias(float* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  add_bias_kernel<<<detail::grid_for(rows * cols, 256), 256, 0, stream>>>(y, bias, rows, cols);
  return cudaGetLastError();
}

}  // namespace llmserve::kernels::cuda
