// The CPU kernels of an encoder (BERT) beside the decoder ones: LayerNorm with a bias, the exact
// (erf) GELU, and bidirectional attention over each request's own new rows (no KV cache, no
// causal mask). Row-major f32; every row's result depends on that row (attention: on that
// request's rows) only, so a text's output is the same in any batch.
#pragma once

#include <cstdint>

#include "llmserve/kernels/thread_pool.h"

namespace llmserve::kernels {

// y[rows, dim] = (x - mean) / sqrt(var + eps) * w + b (biased variance, as torch's LayerNorm).
// y may equal x.
void layer_norm(ThreadPool& pool, const float* x, const float* w, const float* b, int64_t rows,
                int64_t dim, float eps, float* y);

// Post-LN residual: residual = layer_norm(residual + x). x must not alias residual.
void add_layer_norm(ThreadPool& pool, float* residual, const float* x, const float* w,
                    const float* b, int64_t rows, int64_t dim, float eps);

// x[i] = 0.5 x (1 + erf(x / sqrt 2)), in place over n elements.
void gelu_erf(ThreadPool& pool, float* x, int64_t n);

// Bidirectional multi-head attention: request r owns rows [query_start[r], query_start[r+1]) of
// q [T, num_heads, head_dim], k and v [T, num_kv_heads, head_dim]; each of its queries attends
// every one of its rows (softmax(q.k * scale) . v). out: [T, num_heads, head_dim].
// Preconditions: num_heads a multiple of num_kv_heads; query_start non-decreasing.
void bidirectional_attention(ThreadPool& pool, const float* q, const float* k, const float* v,
                             const int32_t* query_start, int64_t num_requests, int num_heads,
                             int num_kv_heads, int head_dim, float scale, float* out);

// Bidirectional attention of one long sequence (a vision tower's image: n in the thousands, one
// request): q, k, v, out [n, num_heads * head_dim] (head h in columns [h * head_dim, (h + 1) *
// head_dim)); out = softmax(q k^T * scale) v per head. Each head's keys and values are packed once
// into f32 panels; blocks of the panel kernel's rows then run scores, softmax and p.v from cache,
// with no n x n matrix. out must not alias q, k or v.
void dense_attention(ThreadPool& pool, const float* q, const float* k, const float* v, int64_t n,
                     int num_heads, int head_dim, float scale, float* out);

}  // namespace llmserve::kernels
