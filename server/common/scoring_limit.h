// The size of a request's prompt scoring (vLLM's prompt_logprobs, or completions' echo with
// logprobs): every choice carries its prompt's logprobs, so the response holds
// n x prompt tokens x (top-N + 1) entries. Bounded by RequestLimits::max_prompt_logprob_entries
// (config server.max_prompt_logprob_entries), as an OpenAI-shaped 400 naming the field.
#pragma once

#include <cstdint>

#include "engine/core/status.h"
#include "server/common/generation_request.h"

namespace llmserve {

// n x (tokens of every prompt) x (params.prompt_logprobs + 1); 0 when the prompt is not scored.
int64_t prompt_logprob_entries(const GenerationRequest& req);

// INVALID_ARGUMENT "prompt_logprobs: ..." (or "logprobs: ..." for echo) naming the product and
// the limit, when prompt_logprob_entries(req) passes it. Call once the prompts are tokens.
Status check_prompt_scoring(const RequestLimits& limits, const GenerationRequest& req);

}  // namespace llmserve
