// What the two halves of the decode attention share (kernels/cuda only): the partial kernel's
// arguments and launch shape (decode_attention.cu), launched with the merge kernel by
// decode_attention_launch.cu.
#pragma once

#include <cstdint>

#include "llmserve/kernels/kv_cache_ops.h"

namespace llmserve::kernels::cuda::detail {

inline constexpr int kDecodeHeadTile = 8;      // query heads per warp (the mma N)
inline constexpr int kDecodeMaxHeadTiles = 8;  // 64 heads, 16 warps per pass

struct DecodePartialArgs {
  const unsigned char* k_cache;
  const unsigned char* v_cache;
  const uint16_t* k_scales;  // 8-bit caches
  const uint16_t* v_scales;
  const int32_t* block_tables;
  int64_t bt_stride;
  int num_kv_heads, block_size;
  const float* q;
  int64_t q_stride;
  uint16_t* out;
  int64_t out_stride;
  const int32_t* plan;
  float* ws_o;   // [capacity, num_heads, D] normalised partial outputs
  float* ws_ml;  // [capacity, num_heads, 2] (max in log2 units, sum)
  int num_heads, group, head_tiles, passes;
  float scale_log2;
  int window;               // > 0: keys below seq_lens[b] - window are skipped / masked
  const int32_t* seq_lens;  // with window > 0
};

// The partial kernel instantiated for head_dim (64 or 128) and dtype (bf16, int8, e4m3), for
// cudaLaunchKernel with one DecodePartialArgs, and its dynamic shared memory in *smem.
void* decode_partial_kernel_for(int head_dim, KvDtype dtype, int* smem);

}  // namespace llmserve::kernels::cuda::detail
