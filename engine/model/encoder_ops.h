// The operations an encoder graph (BertGraph) needs beyond Ops: LayerNorm with a bias, the erf
// GELU, absolute position embeddings, and bidirectional attention among a request's own new rows
// (no KV cache is read: an encoder request is prefill-only and runs whole in one step). A backend
// that serves encoders implements this beside Ops (CpuOps does; the CUDA backend does not yet,
// and BertGraph refuses it at start-up). Pointers are backend memory, f32, row-major; index data
// comes from the batch given to Ops::begin_step.
#pragma once

#include <cstdint>

#include "engine/model/ops.h"

namespace llmserve {

class EncoderOps {
 public:
  virtual ~EncoderOps() = default;
  // x[T, dim] += positions[batch position of row t] + token_types[0]: absolute position and
  // segment-0 embeddings (tables as prepare_embedding returned them). Precondition: every
  // position < positions.rows.
  virtual void add_position_embeddings(const Weight& positions, const Weight& token_types,
                                       float* x) = 0;
  // y[rows, dim] = LayerNorm(x) * w + b; y may equal x. w, b: f32 vectors of dim.
  virtual void layer_norm(const float* x, const Weight& w, const Weight& b, int64_t rows, float eps,
                          float* y) = 0;
  // residual = LayerNorm(residual + x) * w + b (post-LN), x an f32 matmul output.
  virtual void add_layer_norm(float* residual, const float* x, const Weight& w, const Weight& b,
                              int64_t rows, float eps) = 0;
  // x[rows, cols] = gelu_erf(x), in place.
  virtual void gelu(float* x, int64_t rows, int64_t cols) = 0;
  // Each request's queries attend all of its own new rows: q [T, num_heads, head_dim], k / v
  // [T, num_kv_heads, head_dim] (plain matmul outputs), out [T, num_heads, head_dim] f32.
  virtual void bidirectional_attention(const float* q, const float* k, const float* v,
                                       int num_heads, int num_kv_heads, int head_dim, float scale,
                                       float* out) = 0;
};

}  // namespace llmserve
