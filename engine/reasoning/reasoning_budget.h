// Reasoning budget: a cap on the tokens a thinking model spends inside its reasoning section
// (Qwen3's and DeepSeek-R1's <think>...</think>). Once the sample has generated `max_tokens`
// tokens inside the section, the close marker's tokens become the only choice, one per step,
// then the answer follows unconstrained. The state below is part of a sample's SamplingState:
// it advances with every appended token (drafts included, on the advanced copies speculation
// verifies with), so a forced position is the same with and without speculation.
//
// The section is found in text, as the server's reasoning parser finds it: the reply opens it
// with `open` after optional whitespace (or the prompt opened it: starts_inside), and it ends
// at the first `close`. Counting is in tokens; the forced close is `close` as the tokenizer
// encodes it. A reply that does not open the section is never constrained.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace llmserve {

// What a front end asks for (GenerateRequest::reasoning_budget).
struct ReasoningBudget {
  int32_t max_tokens = -1;  // -1: no budget; >= 0: tokens allowed inside the section
  std::string open = "<think>";
  std::string close = "</think>";
  bool starts_inside = false;  // the prompt ends inside an open section

  bool active() const { return max_tokens >= 0; }
  // INVALID_ARGUMENT naming the field when max_tokens < -1 or a marker is empty.
  Status validate() const;
};

// Each token id's bytes (Tokenizer::token_bytes), shared by every sample of an engine.
using TokenBytesTable = std::vector<std::string>;

class ReasoningBudgetState {
 public:
  enum class Phase : uint8_t {
    kMayOpen,  // the reply has not opened the section yet (only whitespace so far)
    kInside,   // counting
    kForcing,  // the budget is spent: the close marker's tokens come next
    kDone,     // the section ended, or the reply never opened it: no constraint
  };

  // close_ids: budget.close as the tokenizer encodes it (non-empty); bytes: the vocabulary's.
  ReasoningBudgetState(const ReasoningBudget& budget, std::vector<int32_t> close_ids,
                       std::shared_ptr<const TokenBytesTable> bytes);

  // The only token allowed at the next position, or -1 when the budget allows any.
  int32_t forced_token() const;
  // Advances over one generated token (sampled, forced or a draft being verified).
  void append(int32_t token);

  Phase phase() const { return phase_; }
  int32_t num_reasoning_tokens() const { return count_; }  // generated inside, close excluded

 private:
  void enter_inside();
  void start_forcing();
  std::string_view bytes_of(int32_t token) const;

  int32_t budget_;
  std::string open_, close_;
  std::vector<int32_t> close_ids_;
  std::shared_ptr<const TokenBytesTable> bytes_;
  Phase phase_;
  int32_t count_ = 0;
  size_t forced_next_ = 0;       // kForcing: index into close_ids_
  std::string text_;             // kMayOpen: the reply so far; kInside: a tail that may hold close_
  std::vector<int32_t> recent_;  // kInside: the last tokens (a close marker begun by the model)
};

}  // namespace llmserve
