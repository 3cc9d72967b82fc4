// The paged KV cache on the device (same page layout as the CPU, kv_cache_ops.h): per layer K and
// V of [num_blocks, num_kv_heads, block_size, head_dim] in bf16 (uint16_t bit patterns); token
// slot s lives in block s / block_size at offset s % block_size.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmserve::kernels::cuda {

struct PagedKvDevice {
  const uint16_t* k_cache = nullptr;
  const uint16_t* v_cache = nullptr;
  const int32_t* block_tables = nullptr;  // [B, block_table_stride] block ids per request
  int64_t block_table_stride = 0;
  int num_kv_heads = 0;
  int block_size = 16;
  int head_dim = 0;
};

// Scatters k, v [T, num_kv_heads, head_dim] f32 (row t at k + t * row_stride, v likewise: they
// may be slices of a fused QKV output) to slots slot_mapping[T] as bf16; slots < 0 are skipped
// (padding). Precondition: slots < num_blocks * block_size.
cudaError_t write_kv(const float* k, const float* v, int64_t row_stride,
                     const int32_t* slot_mapping, int64_t T, int num_kv_heads, int block_size,
                     int head_dim, uint16_t* k_cache, uint16_t* v_cache, cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
