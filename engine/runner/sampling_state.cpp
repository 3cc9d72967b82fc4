#include "engine/runner/sampling_state.h"

#include <algorithm>

#include "engine/grammar/token_bitmask.h"

namespace llmserve {

SamplingState::SamplingState(const SamplingParams& params, std::span<const int32_t> prompt_ids,
                             uint64_t seed)
    : rng_(seed),
      track_output_(params.repetition_penalty != 1.0f || params.presence_penalty != 0.0f ||
                    params.frequency_penalty != 0.0f) {
  if (params.repetition_penalty != 1.0f) {
    prompt_set_.assign(prompt_ids.begin(), prompt_ids.end());
    std::sort(prompt_set_.begin(), prompt_set_.end());
    prompt_set_.erase(std::unique(prompt_set_.begin(), prompt_set_.end()), prompt_set_.end());
  }
}

uint64_t SamplingState::resolve_seed(const SamplingParams& params, uint64_t server_seed,
                                     uint64_t request_id, int32_t index) {
  uint64_t base = params.seed ? *params.seed : RequestRng::derived_seed(server_seed, request_id);
  return RequestRng::sample_seed(base, index);
}

void SamplingState::append(int32_t token_id) {
  ++num_generated_;
  if (track_output_) ++output_counts_[token_id];
  if (matcher_ && !matcher_->accept(token_id)) grammar_refused_ = true;
  if (budget_) budget_->append(token_id);
}

void SamplingState::fill_next_token_mask(std::span<uint32_t> mask) {
  if (matcher_) {
    matcher_->fill_next_token_mask(mask);
  } else {
    std::fill(mask.begin(), mask.end(), ~0u);
  }
  const int32_t forced = forced_token();
  if (forced < 0 || !token_allowed(mask, forced)) return;
  std::fill(mask.begin(), mask.end(), 0u);
  mask[static_cast<size_t>(forced) / 32] = 1u << (static_cast<uint32_t>(forced) % 32);
}

bool SamplingState::in_prompt(int32_t token_id) const {
  return std::binary_search(prompt_set_.begin(), prompt_set_.end(), token_id);
}

}  // namespace llmserve
