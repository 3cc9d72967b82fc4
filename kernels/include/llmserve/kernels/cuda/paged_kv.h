// The paged KV cache on the device (same page layout as the CPU, kv_cache_ops.h): per layer K and
// V of [num_blocks, num_kv_heads, block_size, head_dim] elements; token slot s lives in block
// s / block_size at offset s % block_size. Element types (KvDtype):
//   kF16   bf16 (uint16_t bit patterns): the 16-bit cache is bf16 on CUDA.
//   kInt8  int8, symmetric per (token slot, kv head), the CPU's rule bit for bit: scale
//          s = f16(max|x| / 127), q = clamp(rint(x / s), -127, 127), zeros when s == 0.
//   kFp8   e4m3 (__nv_fp8_e4m3) with the same kind of scale, s = f16(max|x| / 448), element
//          e4m3(x / s) saturating to +-448, zeros when s == 0. A per-row scale (rather than none
//          or one per tensor) puts every row on the full e4m3 range whatever the magnitude of
//          the activations, for the 2 bytes per row that int8 already spends.
// The quantized types keep their scales as IEEE f16 bits in per-layer arrays [num_blocks,
// num_kv_heads, block_size] for K and for V (index kv_scale_offset): x ~ q * s. kF32 is CPU-only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "llmserve/kernels/kv_cache_ops.h"

namespace llmserve::kernels::cuda {

struct PagedKvDevice {
  const void* k_cache = nullptr;  // elements of dtype
  const void* v_cache = nullptr;
  const int32_t* block_tables = nullptr;  // [B, block_table_stride] block ids per request
  int64_t block_table_stride = 0;
  int num_kv_heads = 0;
  int block_size = 16;
  int head_dim = 0;
  KvDtype dtype = KvDtype::kF16;
  const uint16_t* k_scales = nullptr;  // kInt8 / kFp8: f16 scales, 4-byte aligned
  const uint16_t* v_scales = nullptr;
};

// Bytes of one cached element on the device: 2 (bf16), 1 (int8, e4m3); 0 for kF32.
inline int kv_device_elem_bytes(KvDtype d) {
  return d == KvDtype::kF16 ? 2 : (d == KvDtype::kInt8 || d == KvDtype::kFp8) ? 1 : 0;
}

// Scatters k, v [T, num_kv_heads, head_dim] f32 (row t at k + t * row_stride, v likewise: they
// may be slices of a fused QKV output) to slots slot_mapping[T] of caches of `dtype`: bf16
// rounded to nearest even, or quantized per (token, kv head) as above with the scales written to
// k_scales / v_scales (required then). Slots < 0 are skipped (padding). Precondition: slots <
// num_blocks * block_size. cudaErrorInvalidValue for kF32 or missing scales.
cudaError_t write_kv(const float* k, const float* v, int64_t row_stride,
                     const int32_t* slot_mapping, int64_t T, int num_kv_heads, int block_size,
                     int head_dim, KvDtype dtype, void* k_cache, void* v_cache, uint16_t* k_scales,
                     uint16_t* v_scales, cudaStream_t stream);

// bf16 caches.
inline cudaError_t write_kv(const float* k, const float* v, int64_t row_stride,
                            const int32_t* slot_mapping, int64_t T, int num_kv_heads,
                            int block_size, int head_dim, uint16_t* k_cache, uint16_t* v_cache,
                            cudaStream_t stream) {
  return write_kv(k, v, row_stride, slot_mapping, T, num_kv_heads, block_size, head_dim,
                  KvDtype::kF16, k_cache, v_cache, nullptr, nullptr, stream);
}

}  // namespace llmserve::kernels::cuda
