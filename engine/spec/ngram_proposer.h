// Prompt-lookup drafts: the longest suffix of the tokens, between ngram_min and ngram_max long,
// that occurred earlier in them; the drafts are the tokens that followed its most recent earlier
// occurrence. No model, no state: O(tokens) per request and step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/spec/proposer.h"

namespace llmserve {

// Up to max_drafts tokens (fewer when the occurrence is near the end; none without a match),
// with the length of the suffix matched (0 without a match).
Draft ngram_match(std::span<const int32_t> tokens, int32_t ngram_min, int32_t ngram_max,
                  int32_t max_drafts);
inline std::vector<int32_t> ngram_drafts(std::span<const int32_t> tokens, int32_t ngram_min,
                                         int32_t ngram_max, int32_t max_drafts) {
  return ngram_match(tokens, ngram_min, ngram_max, max_drafts).tokens;
}

class NgramProposer final : public Proposer {
 public:
  NgramProposer(int32_t ngram_min, int32_t ngram_max) : min_(ngram_min), max_(ngram_max) {}
  Status propose(std::span<const DraftRequest> requests, std::vector<Draft>& drafts) override;
  bool proposes_before_gate() const override { return true; }

 private:
  int32_t min_, max_;
};

}  // namespace llmserve
