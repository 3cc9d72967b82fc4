// In-place edits of one logits row ([vocab_size] floats) before sampling, in vLLM's order:
// logit_bias, min_tokens masking, repetition penalty, presence / frequency penalties.
// Each touches only the row it is given (batch-invariant).
#pragma once

#include <cstdint>
#include <map>
#include <span>

#include "engine/runner/sampling_state.h"
#include "engine/sampling_params.h"

namespace llmserve {

// logits[id] += bias for each entry; ids outside the row are ignored.
void apply_logit_bias(std::span<float> logits, const std::map<int32_t, float>& bias);

// Sets logits[id] = -inf for each id (out-of-range ids ignored).
void mask_tokens(std::span<float> logits, std::span<const int32_t> ids);

// Until `min_tokens` tokens are generated, masks params.stop_token_ids and, unless ignore_eos,
// the model's EOS ids. With ignore_eos EOS is not a stop, so it is not masked either.
void apply_min_tokens(std::span<float> logits, const SamplingParams& params, int32_t num_generated,
                      std::span<const int32_t> eos_ids);

// HF / vLLM: for each distinct token in prompt + output, a positive logit is divided by
// `penalty`, a negative one multiplied by it.
void apply_repetition_penalty(std::span<float> logits, float penalty, const SamplingState& state);

// OpenAI / vLLM: logit -= presence * [count > 0] + frequency * count, over output tokens.
void apply_presence_frequency(std::span<float> logits, float presence, float frequency,
                              const SamplingState& state);

// Whether apply_logits_processors would change any logit for this request at this step.
bool logits_processors_active(const SamplingParams& params, const SamplingState& state);

// All of the above, in order, as the params ask.
void apply_logits_processors(std::span<float> logits, const SamplingParams& params,
                             const SamplingState& state, std::span<const int32_t> eos_ids);

}  // namespace llmserve
