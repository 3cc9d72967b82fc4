// CpuOps' EncoderOps (engine/model/encoder_ops.h): the kernels of llmserve/kernels/encoder.h over
// the step's batch.
#include "engine/runner/cpu_ops.h"
#include "llmserve/kernels/embedding.h"
#include "llmserve/kernels/encoder.h"

namespace llmserve {

void CpuOps::add_position_embeddings(const Weight& positions, const Weight& token_types, float* x) {
  const int64_t dim = positions.cols, T = batch_.num_tokens();
  embedding_row_.resize(static_cast<size_t>(2 * dim));
  float* type_row = embedding_row_.data() + dim;
  const int32_t zero = 0;
  kernels::embedding_lookup(token_types.type, token_types.data, dim, &zero, 1, type_row);
  for (int64_t t = 0; t < T; ++t) {
    kernels::embedding_lookup(positions.type, positions.data, dim, batch_.positions.data() + t, 1,
                              embedding_row_.data());
    float* row = x + t * dim;
    for (int64_t i = 0; i < dim; ++i)
      row[i] += embedding_row_[static_cast<size_t>(i)] + type_row[i];
  }
}

void CpuOps::layer_norm(const float* x, const Weight& w, const Weight& b, int64_t rows, float eps,
                        float* y) {
  kernels::layer_norm(pool_, x, static_cast<const float*>(w.data),
                      static_cast<const float*>(b.data), rows, w.cols, eps, y);
}

void CpuOps::add_layer_norm(float* residual, const float* x, const Weight& w, const Weight& b,
                            int64_t rows, float eps) {
  kernels::add_layer_norm(pool_, residual, x, static_cast<const float*>(w.data),
                          static_cast<const float*>(b.data), rows, w.cols, eps);
}

void CpuOps::gelu(float* x, int64_t rows, int64_t cols) {
  kernels::gelu_erf(pool_, x, rows * cols);
}

void CpuOps::bidirectional_attention(const float* q, const float* k, const float* v, int num_heads,
                                     int num_kv_heads, int head_dim, float scale, float* out) {
  kernels::bidirectional_attention(pool_, q, k, v, batch_.query_start.data(), batch_.num_requests(),
                                   num_heads, num_kv_heads, head_dim, scale, out);
}

}  // namespace llmserve
