#include "cuda_common.cuh"
#include "llmserve/kernels/cuda/paged_kv.h"

namespace llmserve::kernels::cuda {
namespace {

// One block per token: every (kv head, dim) element of K and V goes to its page slot.
__global__ void write_kv_kernel(const float* k, const float* v, int64_t row_stride,
                                const int32_t* slot_mapping, int num_kv_heads, int block_size,
                                int head_dim, __nv_bfloat16* k_cache, __nv_bfloat16* v_cache) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_mapping[t];
  if (slot < 0) return;
  const int64_t block = slot / block_size, off = slot % block_size;
  const int n = num_kv_heads * head_dim;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const int h = j / head_dim, d = j % head_dim;
    const int64_t dst = ((block * num_kv_heads + h) * block_size + off) * head_dim + d;
    k_cache[dst] = __float2bfloat16_rn(k[t * row_stride + j]);
    v_cache[dst] = __float2bfloat16_rn(v[t * row_stride + j]);
  }
}

}  // namespace

cudaError_t write_kv(const float* k, const float* v, int64_t row_stride,
                     const int32_t* slot_mapping, int64_t T, int num_kv_heads, int block_size,
                     int head_dim, uint16_t* k_cache, uint16_t* v_cache, cudaStream_t stream) {
  if (T <= 0) return cudaSuccess;
  if (row_stride < static_cast<int64_t>(num_kv_heads) * head_dim) return cudaErrorInvalidValue;
  write_kv_kernel<<<static_cast<unsigned>(T), 128, 0, stream>>>(
      k, v, row_stride, slot_mapping, num_kv_heads, block_size, head_dim,
      reinterpret_cast<__nv_bfloat16*>(k_cache), reinterpret_cast<__nv_bfloat16*>(v_cache));
  return cudaGetLastError();
}

}  // namespace llmserve::kernels::cuda
