// What the sampler remembers about one sample between steps: its RNG and the token history the
// penalties read. The engine keeps one per sample (n per request) for the request's lifetime,
// across preemptions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/grammar/token_matcher.h"
#include "engine/reasoning/reasoning_budget.h"
#include "engine/runner/request_rng.h"
#include "engine/sampling_params.h"

namespace llmserve {

class SamplingState {
 public:
  // seed: resolve_seed(...) below. The prompt is kept (as a sorted set) only when the
  // repetition penalty is on; output counts only when some penalty is on.
  SamplingState(const SamplingParams& params, std::span<const int32_t> prompt_ids, uint64_t seed);

  // The RNG seed of sample `index`: params.seed when set, else one derived from the server
  // seed and the engine's request id.
  static uint64_t resolve_seed(const SamplingParams& params, uint64_t server_seed,
                               uint64_t request_id, int32_t index);

  // Records a sampled token (the Sampler calls this); a grammar's matcher and the reasoning
  // budget advance over it.
  void append(int32_t token_id);

  // Structured outputs: the sample's grammar position (null when unconstrained).
  void set_matcher(TokenMatcher matcher) { matcher_.emplace(std::move(matcher)); }
  TokenMatcher* matcher() { return matcher_ ? &*matcher_ : nullptr; }
  const TokenMatcher* matcher() const { return matcher_ ? &*matcher_ : nullptr; }
  // The grammar reached its end (a stop token it allows was appended).
  bool grammar_ended() const { return matcher_ && matcher_->is_terminated(); }
  // A token the grammar does not allow was appended (its matcher stayed where it was): the
  // grammar had come to a dead end, allowing no token at all, and the sample must end in error.
  bool grammar_refused() const { return grammar_refused_; }

  // Reasoning budget (engine/reasoning): the token it forces next, or -1.
  void set_reasoning_budget(ReasoningBudgetState budget) { budget_.emplace(std::move(budget)); }
  const ReasoningBudgetState* reasoning_budget() const { return budget_ ? &*budget_ : nullptr; }
  int32_t forced_token() const { return budget_ ? budget_->forced_token() : -1; }

  // Whether the next token is restricted: by a grammar, or by a token the budget forces.
  bool constrained() const { return matcher_.has_value() || forced_token() >= 0; }
  // The allowed next tokens (token_bitmask_words(vocab) words): the grammar's (all without
  // one), narrowed to the forced token when there is one and the grammar allows it (a grammar
  // that does not allow it wins: the reply stays in its grammar). Call when constrained().
  void fill_next_token_mask(std::span<uint32_t> mask);

  int32_t num_generated() const { return num_generated_; }
  RequestRng& rng() { return rng_; }
  const std::vector<int32_t>& prompt_set() const { return prompt_set_; }  // sorted, unique
  const std::unordered_map<int32_t, int32_t>& output_counts() const { return output_counts_; }
  bool in_prompt(int32_t token_id) const;

 private:
  RequestRng rng_;
  bool track_output_;
  int32_t num_generated_ = 0;
  std::vector<int32_t> prompt_set_;
  std::unordered_map<int32_t, int32_t> output_counts_;
  std::optional<TokenMatcher> matcher_;
  std::optional<ReasoningBudgetState> budget_;
  bool grammar_refused_ = false;
};

}  // namespace llmserve
