// Speculative decoding settings (config section `speculative`, DESIGN §6).
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace llmserve {

enum class SpecMethod : uint8_t { kNone, kNgram, kDraft };

struct SpecConfig {
  SpecMethod method = SpecMethod::kNone;
  int32_t num_tokens = 4;   // drafts proposed per request and step (k)
  int32_t ngram_min = 1;    // shortest suffix the n-gram proposer matches
  int32_t ngram_max = 4;    // longest suffix it tries first
  std::string draft_model;  // method draft: .gguf file or HF directory
  // Above this many running requests a step drafts nothing (large batches are compute-bound).
  int32_t max_running_requests = 8;
  // Verifying (and, for a draft model, making) one draft relative to a decode step: each
  // request drafts only as many tokens as pay for themselves at its recent acceptance rate
  // (DraftGate). 0 = always num_tokens; < 0 = measured at start-up (verify_cost.h).
  double draft_token_cost = -1;

  bool enabled() const { return method != SpecMethod::kNone && num_tokens > 0; }

  Status validate() const {
    if (num_tokens < 1 || num_tokens > 32) {
      return invalid_argument("speculative.num_tokens must be in [1, 32]");
    }
    if (ngram_min < 1 || ngram_max < ngram_min) {
      return invalid_argument("speculative: need 1 <= ngram_min <= ngram_max");
    }
    if (method == SpecMethod::kDraft && draft_model.empty()) {
      return invalid_argument("speculative.method draft needs speculative.draft_model");
    }
    if (!(draft_token_cost >= -1 && draft_token_cost <= 100)) {
      return invalid_argument("speculative.draft_token_cost must be in [-1, 100]");
    }
    if (max_running_requests < 0) {
      return invalid_argument("speculative.max_running_requests must be >= 0");
    }
    return Status::ok();
  }
};

}  // namespace llmserve
