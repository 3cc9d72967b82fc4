#include "engine/runner/logits_processor.h"

#include <limits>

namespace llmserve {
namespace {

bool in_row(std::span<float> logits, int32_t id) {
  return id >= 0 && static_cast<size_t>(id) < logits.size();
}

float repetition_penalized(float logit, float penalty) {
  return logit > 0 ? logit / penalty : logit * penalty;
}

}  // namespace

void apply_logit_bias(std::span<float> logits, const std::map<int32_t, float>& bias) {
  for (const auto& [id, b] : bias) {
    if (in_row(logits, id)) logits[id] += b;
  }
}

void mask_tokens(std::span<float> logits, std::span<const int32_t> ids) {
  for (int32_t id : ids) {
    if (in_row(logits, id)) logits[id] = -std::numeric_limits<float>::infinity();
  }
}

void apply_min_tokens(std::span<float> logits, const SamplingParams& params, int32_t num_generated,
                      std::span<const int32_t> eos_ids) {
  if (num_generated >= params.min_tokens) return;
  mask_tokens(logits, params.stop_token_ids);
  if (!params.ignore_eos) mask_tokens(logits, eos_ids);
}

void apply_repetition_penalty(std::span<float> logits, float penalty, const SamplingState& state) {
  if (penalty == 1.0f) return;
  for (int32_t id : state.prompt_set()) {
    if (in_row(logits, id)) logits[id] = repetition_penalized(logits[id], penalty);
  }
  for (const auto& [id, count] : state.output_counts()) {
    if (count > 0 && in_row(logits, id) && !state.in_prompt(id)) {
      logits[id] = repetition_penalized(logits[id], penalty);
    }
  }
}

void apply_presence_frequency(std::span<float> logits, float presence, float frequency,
                              const SamplingState& state) {
  if (presence == 0.0f && frequency == 0.0f) return;
  for (const auto& [id, count] : state.output_counts()) {
    if (count > 0 && in_row(logits, id)) {
      logits[id] -= presence + frequency * static_cast<float>(count);
    }
  }
}

bool logits_processors_active(const SamplingParams& params, const SamplingState& state) {
  const bool min_tokens = state.num_generated() < params.min_tokens;
  return !params.logit_bias.empty() || min_tokens || params.repetition_penalty != 1.0f ||
         params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f;
}

void apply_logits_processors(std::span<float> logits, const SamplingParams& params,
                             const SamplingState& state, std::span<const int32_t> eos_ids) {
  apply_logit_bias(logits, params.logit_bias);
  apply_min_tokens(logits, params, state.num_generated(), eos_ids);
  apply_repetition_penalty(logits, params.repetition_penalty, state);
  apply_presence_frequency(logits, params.presence_penalty, params.frequency_penalty, state);
}

}  // namespace llmserve
