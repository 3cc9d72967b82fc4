// CPU building blocks of the vision encoders, over f32 row-major activations and a thread pool
// (LayerNorm is the encoders' shared kernel: llmserve/kernels/encoder.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/packed_weight.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::vision {

// A linear layer y = x W^T + b: W [out, in] in its stored type (F32 / F16 / BF16, viewing the
// checkpoint's memory), bias [out] in f32 (empty: none); packed: W in the CPU matmul's panels
// (pack_linear: F16 / BF16), which linear() then runs instead.
struct Linear {
  kernels::DType type = kernels::DType::F32;
  const void* weight = nullptr;
  int64_t out = 0;
  int64_t in = 0;
  std::vector<float> bias;
  kernels::PackedWeight packed;
};

// Packs l's weight when the packed matmul takes its type (kernels::can_pack_weight); otherwise, or
// out of memory, l stays as it is. Results are the same f32 products either way, within rounding.
void pack_linear(Linear& l);

// y[rows, l.out] = x[rows, l.in] . W^T + b. y must not alias x.
void linear(kernels::ThreadPool& pool, const float* x, int64_t rows, const Linear& l, float* y);

// ys[i][rows, ls[i]->out] = x . W_i^T + b_i for linears of the same `in` (q, k and v): one packed
// product over all of them when every one is packed, else one linear() each. ys[i] must not alias
// x; at most 8.
void linears(kernels::ThreadPool& pool, const float* x, int64_t rows,
             std::span<const Linear* const> ls, std::span<float* const> ys);

// x[i] = gelu_tanh(x[i]) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), in place.
void gelu_tanh(kernels::ThreadPool& pool, float* x, int64_t n);

// Full (bidirectional) multi-head attention of one image: q, k, v, out [n, heads * head_dim]
// (head h in columns [h * head_dim, (h + 1) * head_dim)); out = softmax(q k^T * scale) v per
// head (kernels::dense_attention). out must not alias q, k or v.
void full_attention(kernels::ThreadPool& pool, const float* q, const float* k, const float* v,
                    int64_t n, int64_t heads, int64_t head_dim, float scale, float* out);

}  // namespace llmserve::vision
