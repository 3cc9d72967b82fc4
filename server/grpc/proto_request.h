// llmserve.v1.GenerateRequest -> the neutral GenerationRequest, read field by field and validated
// by server/common like the HTTP API, so limits and error fields agree.
#pragma once

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"
#include "llmserve/v1/generation.pb.h"
#include "server/common/generation_request.h"
#include "server/common/request_limits.h"

namespace llmserve {

// Exactly one of prompt / prompt_token_ids; NaN or infinite floats are rejected naming the
// field. Errors: INVALID_ARGUMENT "<field>: ...", OUT_OF_RANGE (context length).
// thinking_token_budget: the reply's reasoning section is located with `reasoning` (the server's
// resolved parser) from the prompt's text; kNone: the budget has no effect.
Result<GenerationRequest> parse_proto_request(const v1::GenerateRequest& req,
                                              const Tokenizer& tokenizer,
                                              const RequestLimits& limits,
                                              ReasoningParser reasoning = ReasoningParser::kNone);

}  // namespace llmserve
