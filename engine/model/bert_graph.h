// The BERT encoder forward (engine/model/bert_config.h), for embeddings: token + absolute
// position + segment-0 embeddings, LayerNorm; per layer Q/K/V (with biases) -> bidirectional
// attention among each request's own rows -> output projection -> residual + LayerNorm (post-LN)
// -> up projection -> erf GELU -> down projection -> residual + LayerNorm. It has no LM head:
// every request of a step must be a whole prompt (a pooling request: prefill-only, never
// chunked), and no row is sampled. The KV cache is neither written nor read.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/encoder_ops.h"
#include "engine/model/model_graph.h"
#include "engine/model/model_weights.h"
#include "engine/model/ops.h"

namespace llmserve {

class BertGraph final : public ModelGraph {
 public:
  // Prepares the weights with `ops` (which must also implement EncoderOps: UNIMPLEMENTED
  // otherwise, e.g. on the CUDA backend) and scratch for up to max_tokens rows per step.
  // `model` and `ops` must outlive the graph.
  static Result<std::unique_ptr<BertGraph>> create(const LoadedModel& model, Ops& ops,
                                                   int64_t max_tokens);

  // Errors: sampled rows (an encoder has no LM head), a request that is not a whole prompt
  // (positions 0..n-1 all in this step), a position past the position table, a batch over the
  // scratch size. Returns no logits.
  Result<std::span<const float>> forward(const ForwardBatch& batch) override;
  Result<const float*> forward_logits(const ForwardBatch& batch) override;
  // [P, hidden]: the last layer's output (after its LayerNorm) of batch.pool_rows.
  std::span<const float> pooled_hidden() const override { return pooled_; }
  const ModelConfig& config() const override { return cfg_; }

 private:
  struct Layer {
    Weight wq, wk, wv, wo, bq, bk, bv, bo;
    Weight attn_norm_w, attn_norm_b, up, up_b, down, down_b, out_norm_w, out_norm_b;
  };
  BertGraph(const ModelConfig& cfg, Ops& ops, EncoderOps& enc) : cfg_(cfg), ops_(ops), enc_(enc) {}
  Status init(const LoadedModel& model, int64_t max_tokens);
  Status check_batch(const ForwardBatch& batch) const;

  ModelConfig cfg_;
  Ops& ops_;
  EncoderOps& enc_;
  int64_t max_tokens_ = 0;
  int64_t max_positions_ = 0;  // rows of the position table
  Weight tok_embd_, pos_embd_, type_embd_, embd_norm_w_, embd_norm_b_;
  std::vector<Layer> layers_;
  float *resid_ = nullptr, *q_ = nullptr, *k_ = nullptr, *v_ = nullptr, *attn_ = nullptr;
  float *o_ = nullptr, *up_ = nullptr;
  std::vector<float> pooled_;
};

}  // namespace llmserve
