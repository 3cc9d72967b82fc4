// POST /v1/completions body -> the neutral GenerationRequest (validated, prompts tokenized).
// Pure; usable from fuzz targets.
#pragma once

#include <string_view>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/common/generation_request.h"
#include "server/common/request_limits.h"

namespace llmserve {

// `prompt` may be a string, a list of strings, a list of token ids, or a list of such lists;
// `logprobs` is an integer (top-N), `echo` a boolean. Errors: INVALID_ARGUMENT (message
// "<field>: ..."), OUT_OF_RANGE (context length).
Result<GenerationRequest> parse_completion_request(std::string_view body,
                                                   const Tokenizer& tokenizer,
                                                   const RequestLimits& limits);

}  // namespace llmserve
