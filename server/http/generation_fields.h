// The JSON fields /v1/completions and /v1/chat/completions share (model, sampling, stop,
// streaming, priority, timeout, user, structured output), read into the neutral request.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "server/common/generation_request.h"
#include "server/common/request_limits.h"

namespace llmserve {

// Reads every shared field with its JSON type checked; ranges are left to
// validate_generation_request. Does not read prompts, logprobs or echo (their shapes differ
// between the two APIs). Errors: INVALID_ARGUMENT "<field>: ...".
Status read_generation_fields(const nlohmann::json& body, const RequestLimits& limits,
                              GenerationRequest* out);

}  // namespace llmserve
