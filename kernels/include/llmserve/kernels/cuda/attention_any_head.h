// Paged causal attention for the head dims the tensor-core kernels do not take (Phi-3's 96, Gemma
// 3's 256: any multiple of 32 up to 256), prefill and decode alike: one warp per (query row,
// head) walks its keys one by one with an online softmax in f32, reading bf16, int8 or e4m3 pages
// (paged_kv.h) with their scales. Twin of kernels::prefill_attention / decode_attention on the
// CPU; slower than the tiled kernels, for the models whose heads they do not fit.
#pragma once

#include <cuda_runtime_api.h>

#include "llmserve/kernels/cuda/prefill_attention.h"

namespace llmserve::kernels::cuda {

// head_dim a multiple of 32 and at most 256.
bool attention_any_head_supports(int head_dim);

// p as for prefill_attention (its head_dim, alignment and stride preconditions relaxed: q and
// out need only their element alignment), except: p.query_start == nullptr is the decode form,
// where request b owns query row b alone at position seq_lens[b] - 1 and a request with
// seq_lens[b] == 0 (padding) gets zeros. cudaErrorInvalidValue for a shape outside those.
// Graph-capturable.
cudaError_t attention_any_head(const PrefillAttentionParams& p, cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
