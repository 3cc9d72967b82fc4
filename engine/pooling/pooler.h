// Turns the hidden states of a prompt's rows into its sentence vector on the host: the model's
// final RMSNorm per row (the graph hands the rows over before it), then the pooling (last row,
// mean of the rows, or the first row), the Dense layers, Matryoshka truncation and L2
// normalisation; or, for a reranker (PoolingConfig::rank), the last row's relevance score
// P("yes") as a one-value vector. Pure function of the rows: a text's vector does not depend on the
// batch it ran in (the rows are summed in position order).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/model_weights.h"
#include "engine/pooling/pooling_config.h"

namespace llmserve {

class Pooler {
 public:
  // Copies the final norm's weight (any dequantizable type) from `model`; the model may be
  // released afterwards. An encoder (BERT) has none: its rows are pooled as they come. Errors: no
  // output_norm.weight, or a Dense layer of the wrong width.
  static Result<std::unique_ptr<Pooler>> create(const LoadedModel& model, PoolingConfig config);

  // rows: [n, hidden] pre-norm hidden states of positions 0..n-1 of one prompt (n >= 1).
  // dimensions: 0 = full width, else 1..width (Matryoshka: the leading `dimensions` values,
  // normalised after the cut when the model normalises). Precondition: checked by the caller
  // with check_dimensions.
  // A reranker: {P("yes")} of the prompt's last row (dimensions ignored).
  std::vector<float> pool(std::span<const float> rows, int64_t n, int32_t dimensions) const;

  bool is_reranker() const { return config_.rank.has_value(); }
  // The output width (after the Dense layers; 1 for a reranker).
  int64_t width() const { return config_.dimensions(hidden_); }
  const PoolingConfig& config() const { return config_; }
  // INVALID_ARGUMENT unless 0 <= dimensions <= width().
  Status check_dimensions(int32_t dimensions) const;

  // Applies the final norm to one row (hidden floats) in place: exposed for the reranker.
  void final_norm(std::span<float> row) const;

 private:
  float rank_score(const std::vector<float>& x) const;  // x: the normed last row
  Pooler(PoolingConfig config, int64_t hidden, float eps, std::vector<float> norm)
      : config_(std::move(config)), hidden_(hidden), eps_(eps), norm_(std::move(norm)) {}
  PoolingConfig config_;
  int64_t hidden_;
  float eps_;
  std::vector<float> norm_;
};

}  // namespace llmserve
