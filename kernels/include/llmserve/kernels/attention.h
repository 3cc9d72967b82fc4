// Attention over the paged KV cache (layout in kv_cache_ops.h; f32, f16 or int8 elements, f32
// arithmetic; int8 rows are dequantized in registers), grouped-query: query head h
// reads kv head h / (num_heads / num_kv_heads). Keys are split into fixed partitions of
// kAttentionPartition positions whose partial softmax results are merged with log-sum-exp in
// order, so a query's output depends only on its own inputs: prefill and decode kernels give
// bit-identical results for the same query, alone or in any batch.
#pragma once

#include <cstdint>

#include "llmserve/kernels/kv_cache_ops.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::kernels {

inline constexpr int kAttentionPartition = 256;

struct PagedKv {
  KvCacheShape shape;
  const void* k_cache;  // elements of shape.dtype
  const void* v_cache;
  const int32_t* block_tables;  // [B, max_blocks_per_seq] block ids per request
  int64_t max_blocks_per_seq;
  const uint16_t* k_scales = nullptr;  // int8: f16 scales, [num_blocks, num_kv_heads, block_size]
  const uint16_t* v_scales = nullptr;
  // > 0: sliding-window attention (Mistral): the query at position p attends only positions
  // (p - sliding_window, p], the last sliding_window of them, itself included. 0: no window.
  int64_t sliding_window = 0;
  // With sliding_window > 0: a row given an attend_end past its position (prefill_attention)
  // sees the window on both sides, |position - key| < sliding_window (EmbeddingGemma's local
  // layers in bidirectional mode); causal rows are unchanged.
  bool symmetric_window = false;
};

// Varlen causal attention. q/out: [T, num_heads, head_dim]; request b owns query rows
// [query_start[b], query_start[b+1]) and seq_lens[b] cached tokens including those new ones
// (already written by write_kv); its query i sits at position seq_lens[b] - q_len_b + i and
// attends positions 0..that position (the last kv.sliding_window of them when that is > 0).
// scale is usually 1/sqrt(head_dim). attend_end (may be null: causal): [T] per query row the
// exclusive end of the positions it attends, in [its position + 1, seq_lens[b]] (a row inside an
// image attends the whole image: Gemma 3); the window still counts back from its own position,
// and with kv.symmetric_window forward from it too.
void prefill_attention(ThreadPool& pool, const PagedKv& kv, const float* q,
                       const int32_t* query_start, const int32_t* seq_lens, int64_t B,
                       int num_heads, float scale, float* out, const int32_t* attend_end = nullptr);

// One query per request at position seq_lens[b] - 1 (same window rule). q/out:
// [B, num_heads, head_dim].
void decode_attention(ThreadPool& pool, const PagedKv& kv, const float* q, const int32_t* seq_lens,
                      int64_t B, int num_heads, float scale, float* out);

}  // namespace llmserve::kernels
