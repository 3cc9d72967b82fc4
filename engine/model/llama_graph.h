// The Llama-family decoder forward (llama, mistral, qwen2, smollm), written once against Ops:
// token embedding, per layer RMSNorm -> Q/K/V (+ qwen2 biases) -> RoPE -> paged KV write ->
// grouped-query attention (decode and prefill kernels) -> output projection -> residual ->
// RMSNorm -> SwiGLU MLP -> residual; final RMSNorm and the LM head (tied to the embedding when
// the model has no output.weight) for the sample rows only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/forward_batch.h"
#include "engine/model/model_graph.h"
#include "engine/model/model_weights.h"
#include "engine/model/ops.h"

namespace llmserve {

class LlamaGraph final : public ModelGraph {
 public:
  // Prepares the weights with `ops` and allocates activation scratch for up to max_tokens new
  // tokens and max_samples sampled rows per step. `model` and `ops` must outlive the graph;
  // ops must already hold its KV cache (alloc_kv_cache).
  // context_len: the longest sequence the graph will see (longrope picks its factors by it; 0:
  // the model's max_context).
  static Result<std::unique_ptr<LlamaGraph>> create(const LoadedModel& model, Ops& ops,
                                                    int64_t max_tokens, int64_t max_samples,
                                                    int64_t context_len = 0);

  // Runs one step; returns logits [S, vocab_size] (row s for batch.sample_rows[s]) as a host
  // view valid until the next forward. Errors: a batch that fails validation or exceeds the
  // scratch sizes.
  Result<std::span<const float>> forward(const ForwardBatch& batch) override;
  // The same, leaving the logits in backend memory (the step finished with Ops::finish_step):
  // for a backend that samples where the logits are.
  Result<const float*> forward_logits(const ForwardBatch& batch) override;

  // The last forward's batch.pool_rows: [P, hidden] hidden states after the last layer, before
  // the final norm (engine/pooling applies it), in pool_rows order; valid until the next forward.
  std::span<const float> pooled_hidden() const override { return pooled_; }
  const ModelConfig& config() const override { return cfg_; }
  int64_t max_tokens() const { return max_tokens_; }
  int64_t max_samples() const { return max_samples_; }

 private:
  struct Layer {
    Weight attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
    Weight bq, bk, bv;
    Weight q_norm, k_norm;                 // cfg.qk_norm
    Weight post_attn_norm, post_ffn_norm;  // cfg.sandwich_norms
    bool local = false;                    // a local layer (cfg.local_layers)
    bool has_bias = false;
    bool is_moe = false;  // cfg.is_moe_layer: moe replaces w_gate / w_up / w_down
    MoeLayerWeights moe;
  };
  LlamaGraph(const ModelConfig& cfg, Ops& ops) : cfg_(cfg), ops_(ops) {}
  Status copy_pool_rows(const ForwardBatch& batch);
  Status init(const LoadedModel& model, int64_t max_tokens, int64_t max_samples,
              int64_t context_len);

  ModelConfig cfg_;
  Ops& ops_;
  int64_t max_tokens_ = 0, max_samples_ = 0;
  Weight tok_embd_, output_norm_, lm_head_;
  std::vector<Layer> layers_;
  // Activation scratch (backend memory).
  float *resid_ = nullptr, *h_ = nullptr, *q_ = nullptr, *k_ = nullptr, *v_ = nullptr;
  float *attn_ = nullptr, *o_ = nullptr, *gate_ = nullptr, *up_ = nullptr;
  float *s_resid_ = nullptr, *s_x_ = nullptr, *logits_ = nullptr;
  // Quantized (int8 / fp8) KV cache with a power-of-two head_dim: q, k and v are rotated by the
  // orthonormal Hadamard transform after RoPE and the attention output rotated back, which
  // leaves the attention exact and spreads outlier channels before they are quantized.
  bool rotate_kv_ = false;
  std::vector<float> pooled_;        // host copy of the pool rows (pooled_hidden)
  std::vector<int32_t> attend_end_;  // cfg.bidirectional: the step's attend_end
};

}  // namespace llmserve
