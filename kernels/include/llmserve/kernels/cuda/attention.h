// CUDA attention over the paged bf16 KV cache (paged_kv.h), twins of llmserve/kernels/attention.h.
// Grouped-query: query head h reads kv head h / (num_heads / num_kv_heads), K/V never repeated.
// head_dim must be 64 or 128 (attention_supports_head_dim). q/out are f32 device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "llmserve/kernels/cuda/paged_kv.h"

namespace llmserve::kernels::cuda {

bool attention_supports_head_dim(int head_dim);

// FlashAttention-2 style varlen causal prefill (64-query x 64-key tiles in shared memory, online
// softmax, bf16 tensor-core products with f32 accumulation). q/out: [T, num_heads, head_dim]
// by absolute row; request b owns rows [query_start[b], query_start[b+1]) and has seq_lens[b]
// cached tokens including those rows, so its query i sits at position seq_lens[b] - q_len + i and
// attends positions 0..that one (earlier pages included). max_q_len >= every q_len (grid size).
cudaError_t prefill_attention(const PagedKvDevice& kv, const float* q, const int32_t* query_start,
                              const int32_t* seq_lens, int B, int max_q_len, int num_heads,
                              float scale, float* out, cudaStream_t stream);

// Keys per split of the decode kernel; a request of L tokens uses ceil(L / kDecodePartition).
inline constexpr int kDecodePartition = 256;

// Floats of workspace decode_attention needs for B requests up to max_seq_len tokens.
int64_t decode_attention_workspace_floats(int B, int num_heads, int head_dim, int max_seq_len);

// Paged decode, one query per request at position seq_lens[b] - 1 (seq_lens[b] == 0: zero
// output, used for padding). q/out: [B, num_heads, head_dim]. Split-K over the sequence in
// kDecodePartition chunks, merged with log-sum-exp; the grid covers max_seq_len (>= every
// seq_len) so a captured graph stays valid for any shorter lengths.
cudaError_t decode_attention(const PagedKvDevice& kv, const float* q, const int32_t* seq_lens,
                             int B, int max_seq_len, int num_heads, float scale, float* workspace,
                             float* out, cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
