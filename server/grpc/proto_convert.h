// llmserve.v1 messages <-> engine types. Requests are validated by the same parser as the
// HTTP API (the proto is mapped onto the OpenAI field names), so limits and messages agree.
#pragma once

#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/generate_request.h"
#include "engine/tokenizer/tokenizer.h"
#include "llmserve/v1/generation.pb.h"
#include "server/http/completion_request.h"
#include "server/http/request_limits.h"

namespace llmserve {

// The OpenAI-style JSON body equivalent to `req` (prompt or prompt token ids, sampling fields).
nlohmann::json proto_request_to_json(const v1::GenerateRequest& req);
Result<ParsedCompletion> parse_proto_request(const v1::GenerateRequest& req,
                                             const Tokenizer& tokenizer,
                                             const RequestLimits& limits);

// Token strings are sanitized to valid UTF-8 (protobuf strings require it).
void fill_logprobs(const std::vector<TokenLogprob>& lps, const Tokenizer& tok,
                   google::protobuf::RepeatedPtrField<v1::TokenLogprob>* out);
void fill_usage(const Usage& u, v1::Usage* out);

}  // namespace llmserve
