#include "cuda_common.cuh"
#include "kv_quant.cuh"
#include "llmserve/kernels/cuda/paged_kv.h"

namespace llmserve::kernels::cuda {
namespace {

constexpr int kThreads = 128;

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

// One block per token, one warp per (kv head, K or V) row at a time: the row's max |x| by a warp
// reduction, its f16 scale, then the quantized elements (IEEE divisions, as on the CPU).
template <KvDtype KT>
__global__ void write_kv_quant_kernel(const float* k, const float* v, int64_t row_stride,
                                      const int32_t* slot_mapping, int num_kv_heads, int block_size,
                                      int head_dim, uint8_t* k_cache, uint8_t* v_cache,
                                      uint16_t* k_scales, uint16_t* v_scales) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_mapping[t];
  if (slot < 0) return;
  const int64_t block = slot / block_size, off = slot % block_size;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  for (int r = warp; r < 2 * num_kv_heads; r += kThreads / 32) {
    const int h = r >> 1;
    const bool is_v = (r & 1) != 0;
    const float* x = (is_v ? v : k) + t * row_stride + static_cast<int64_t>(h) * head_dim;
    float amax = 0.0f;
    for (int d = lane; d < head_dim; d += 32) amax = fmaxf(amax, fabsf(x[d]));
    amax = detail::warp_max(amax);
    const __half sh = __float2half_rn(fminf(__fdiv_rn(amax, detail::kQuantMax<KT>), kMaxKvScale));
    const float s = __half2float(sh);
    const int64_t row = (block * num_kv_heads + h) * block_size + off;
    uint8_t* dst = (is_v ? v_cache : k_cache) + row * head_dim;
    for (int d = lane; d < head_dim; d += 32) {
      dst[d] = s == 0.0f ? uint8_t{0} : detail::quantize_elem<KT>(__fdiv_rn(x[d], s));
    }
    if (lane == 0) (is_v ? v_scales : k_scales)[row] = __half_as_ushort(sh);
  }
}

}  // namespace

cudaError_t write_kv(const float* k, const float* v, int64_t row_stride,
                     const int32_t* slot_mapping, int64_t T, int num_kv_heads, int block_size,
                     int head_dim, KvDtype dtype, void* k_cache, void* v_cache, uint16_t* k_scales,
                     uint16_t* v_scales, cudaStream_t stream) {
  if (T <= 0) return cudaSuccess;
  if (row_stride < static_cast<int64_t>(num_kv_heads) * head_dim) return cudaErrorInvalidValue;
  if (kv_device_elem_bytes(dtype) == 0 ||
      (kv_dtype_scaled(dtype) && (k_scales == nullptr || v_scales == nullptr)))
    return cudaErrorInvalidValue;
  const auto grid = static_cast<unsigned>(T);
  auto* kb = static_cast<uint8_t*>(k_cache);
  auto* vb = static_cast<uint8_t*>(v_cache);
  if (dtype == KvDtype::kInt8) {
    write_kv_quant_kernel<KvDtype::kInt8>
        <<<grid, kThreads, 0, stream>>>(k, v, row_stride, slot_mapping, num_kv_heads, block_size,
                                        head_dim, kb, vb, k_scales, v_scales);
  } else if (dtype == KvDtype::kFp8) {
    write_kv_quant_kernel<KvDtype::kFp8>
        <<<grid, kThreads, 0, stream>>>(k, v, row_stride, slot_mapping, num_kv_heads, block_size,
                                        head_dim, kb, vb, k_scales, v_scales);
  } else {
    write_kv_kernel<<<grid, kThreads, 0, stream>>>(
        k, v, row_stride, slot_mapping, num_kv_heads, block_size, head_dim,
        static_cast<__nv_bfloat16*>(k_cache), static_cast<__nv_bfloat16*>(v_cache));
  }
  return cudaGetLastError();
}

}  // namespace llmserve::kernels::cuda
