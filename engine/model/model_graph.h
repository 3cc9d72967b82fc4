// One model's forward over a ForwardBatch, as the model runner drives it: the decoder graph
// (LlamaGraph, every generating family) or an encoder (BertGraph, embeddings only).
#pragma once

#include <cstdint>
#include <span>

#include "engine/core/status.h"
#include "engine/model/forward_batch.h"
#include "engine/model/model_config.h"

namespace llmserve {

class ModelGraph {
 public:
  virtual ~ModelGraph() = default;
  // Runs one step; returns logits [S, vocab_size] (row s for batch.sample_rows[s]) as a host
  // view valid until the next forward (empty when S is 0).
  virtual Result<std::span<const float>> forward(const ForwardBatch& batch) = 0;
  // The same, leaving the logits in backend memory (null when S is 0).
  virtual Result<const float*> forward_logits(const ForwardBatch& batch) = 0;
  // The last forward's batch.pool_rows: [P, hidden] f32 hidden states of the last layer (before
  // a final norm the pooler applies, where the model has one), valid until the next forward.
  virtual std::span<const float> pooled_hidden() const = 0;
  virtual const ModelConfig& config() const = 0;
};

}  // namespace llmserve
