// Varlen causal prefill attention over the paged KV cache (paged_kv.h: bf16, or int8 / e4m3
// dequantized on chip), FlashAttention-2 style on bf16 tensor cores with f32 accumulation; twin
// of kernels::prefill_attention (llmserve/kernels/attention.h). Grouped-query: query head h reads
// kv head h / (num_heads / num_kv_heads), K/V never repeated.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "llmserve/kernels/cuda/attention.h"
#include "llmserve/kernels/cuda/paged_kv.h"

namespace llmserve::kernels::cuda {

// Request b owns query rows [query_start[b], query_start[b+1]) (q_len_b of them, 0 allowed) and
// has seq_lens[b] >= q_len_b cached tokens including those rows (already written by write_kv),
// so its query i sits at position seq_lens[b] - q_len_b + i and attends positions 0..that one,
// earlier pages included (chunked prefill, prefix-cache hits), through kv.block_tables row b.
struct PrefillAttentionParams {
  // head_dim 64 or 128; block_size a multiple of 16; caches 16-byte aligned, and for int8 /
  // e4m3 the scales too.
  PagedKvDevice kv;
  // f32 rows [T, num_heads, head_dim], row r at q + r * q_row_stride (q may sit inside a fused
  // QKV buffer). q 16-byte aligned, q_row_stride a multiple of 4 and >= num_heads * head_dim.
  const float* q = nullptr;
  int64_t q_row_stride = 0;
  const int32_t* query_start = nullptr;  // [num_seqs + 1], device
  const int32_t* seq_lens = nullptr;     // [num_seqs], device
  int num_seqs = 0;
  int max_q_len = 0;   // >= every q_len_b: sizes the grid
  int num_heads = 0;   // a multiple of kv.num_kv_heads
  float scale = 0.0f;  // > 0, usually 1 / sqrt(head_dim)
  // bf16 (uint16_t bits, round to nearest even) rows [T, num_heads, head_dim] at
  // out + r * out_row_stride: out 4-byte aligned, out_row_stride even and >= num_heads * head_dim.
  uint16_t* out = nullptr;
  int64_t out_row_stride = 0;
  // > 0: sliding window, the query at position p attends only (p - sliding_window, p]. 0: all.
  int sliding_window = 0;
};

// cudaSuccess when p meets the preconditions above that the host can check (pointers,
// alignment, strides, head_dim, head counts, scale); cudaErrorInvalidValue otherwise.
cudaError_t prefill_attention_check(const PrefillAttentionParams& p);

// Dynamic shared memory of one CTA in bytes (Q tile + double-buffered K/V tiles, or for 8-bit
// caches their staging and one bf16 K/V tile); 0 when head_dim or dtype is not supported.
int prefill_attention_smem_bytes(int head_dim, KvDtype dtype = KvDtype::kF16);

// Launches on `stream` (graph-capturable). num_seqs == 0 or max_q_len == 0 launches nothing.
cudaError_t prefill_attention(const PrefillAttentionParams& p, cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
