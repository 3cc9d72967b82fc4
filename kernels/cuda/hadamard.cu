#include <cuda_bf16.h>

#include "cuda_common.cuh"
#include "llmserve/kernels/cuda/hadamard.h"

namespace llmserve::kernels::cuda {
namespace {

__device__ float load_elem(const float* p) {
  return *p;
}
__device__ float load_elem(const uint16_t* p) {
  return __bfloat162float(__ushort_as_bfloat16(*p));
}
__device__ void store_elem(float* p, float v) {
  *p = v;
}
__device__ void store_elem(uint16_t* p, float v) {
  *p = __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

// One block per (token, head): the row in shared memory (f32), log2(head_dim) butterfly passes.
template <typename Elem>
__global__ void hadamard_kernel(Elem* x, int64_t row_stride, int heads, int head_dim, float norm) {
  extern __shared__ float s[];
  const int64_t t = blockIdx.x / heads;
  const int h = static_cast<int>(blockIdx.x % heads);
  Elem* row = x + t * row_stride + static_cast<int64_t>(h) * head_dim;
  for (int i = threadIdx.x; i < head_dim; i += blockDim.x) s[i] = load_elem(row + i);
  __syncthreads();
  for (int len = 1; len < head_dim; len <<= 1) {
    for (int p = threadIdx.x; p < head_dim / 2; p += blockDim.x) {
      const int i = (p / len) * 2 * len + p % len;
      const float a = s[i], b = s[i + len];
      s[i] = __fadd_rn(a, b);
      s[i + len] = __fsub_rn(a, b);
    }
    __syncthreads();
  }
  for (int i = threadIdx.x; i < head_dim; i += blockDim.x)
    store_elem(row + i, __fmul_rn(s[i], norm));
}

template <typename Elem>
cudaError_t launch(Elem* x, int64_t row_stride, int64_t T, int heads, int head_dim,
                   cudaStream_t stream) {
  if (T <= 0 || heads <= 0) return cudaSuccess;
  if (head_dim < 2 || (head_dim & (head_dim - 1)) != 0 ||
      row_stride < static_cast<int64_t>(heads) * head_dim) {
    return cudaErrorInvalidValue;
  }
  const float norm = 1.0f / sqrtf(static_cast<float>(head_dim));
  const unsigned threads = static_cast<unsigned>(head_dim / 2 < 256 ? head_dim / 2 : 256);
  hadamard_kernel<Elem>
      <<<static_cast<unsigned>(T * heads), threads, static_cast<size_t>(head_dim) * sizeof(float),
         stream>>>(x, row_stride, heads, head_dim, norm);
  return cudaGetLastError();
}

}  // namespace

cudaError_t hadamard_rows(float* x, int64_t row_stride, int64_t T, int heads, int head_dim,
                          cudaStream_t stream) {
  return launch(x, row_stride, T, heads, head_dim, stream);
}

cudaError_t hadamard_rows_bf16(uint16_t* x, int64_t row_stride, int64_t T, int heads, int head_dim,
                               cudaStream_t stream) {
  return launch(x, row_stride, T, heads, head_dim, stream);
}

}  // namespace llmserve::kernels::cuda
