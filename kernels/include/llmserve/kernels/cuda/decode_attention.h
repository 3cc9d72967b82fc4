// Paged decode attention on the GPU, twin of llmserve/kernels/attention.h decode_attention: one
// query token per request at position seq_len - 1, over the bf16, int8 or e4m3 pages of
// paged_kv.h (8-bit elements are read as such and dequantized on chip), run from a host plan
// (decode_plan.h). Grouped-query: query head h reads kv head h / (num_heads / num_kv_heads); any
// group size. head_dim 64 or 128. Graph-capturable (no allocation, no sync).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "llmserve/kernels/cuda/paged_kv.h"

namespace llmserve::kernels::cuda {

struct DecodeAttentionParams {
  // block_tables rows: one per request row b. Caches 16-byte aligned; int8 / e4m3: scales
  // 4-byte aligned and an even block_size.
  PagedKvDevice kv;
  // q f32: head h of request b at q + b * q_row_stride + h * head_dim. out bf16 bits (round to
  // nearest even) at out + b * out_row_stride + h * head_dim. q, out, workspace 16-byte aligned;
  // q_row_stride a multiple of 4 floats, out_row_stride a multiple of 8 elements.
  const float* q = nullptr;
  int64_t q_row_stride = 0;
  uint16_t* out = nullptr;
  int64_t out_row_stride = 0;
  // Device copy of pack_decode_plan(plan, plan_capacity, max_requests >= num_requests, ...).
  // Rows whose request has no split (seq_len 0, padding) get zeros.
  const int32_t* plan = nullptr;
  int plan_capacity = 0;
  float* workspace = nullptr;  // decode_workspace_floats(plan_capacity, num_heads, head_dim)
  int num_requests = 0;        // B rows of q, out and block_tables, at most 65535
  int num_heads = 0;           // a multiple of kv.num_kv_heads
  float scale = 0.0f;          // softmax scale, usually 1 / sqrt(head_dim)
  // > 0: sliding window, request b's query (position seq_lens[b] - 1) attends only its last
  // sliding_window positions; seq_lens [num_requests] (device) is required then. Keys of a plan
  // item below the window are skipped in the kernel (an item wholly below it adds nothing).
  int sliding_window = 0;
  const int32_t* seq_lens = nullptr;
};

// Two kernels on `stream`: one CTA per (plan capacity slot, kv head), those past the plan's item
// count exit at once, then the log-sum-exp merge of split requests. cudaErrorInvalidValue for a
// shape or alignment outside the above.
cudaError_t decode_attention(const DecodeAttentionParams& p, cudaStream_t stream);

// Resident CTAs per SM of the decode kernel for this shape and cache dtype on the current device
// (the plan's DecodePlanConfig::ctas_per_sm).
cudaError_t decode_attention_ctas_per_sm(int head_dim, int num_heads, int num_kv_heads,
                                         int* ctas_per_sm, KvDtype dtype = KvDtype::kF16);

}  // namespace llmserve::kernels::cuda
