// Engine outputs -> llmserve.v1 response messages (requests are read by proto_request.h).
#pragma once

#include <string>
#include <vector>

#include "engine/generate_request.h"
#include "engine/tokenizer/tokenizer.h"
#include "llmserve/v1/generation.pb.h"

namespace llmserve {

// Token strings are sanitized to valid UTF-8 (protobuf strings require it).
void fill_logprobs(const std::vector<TokenLogprob>& lps, const Tokenizer& tok,
                   google::protobuf::RepeatedPtrField<v1::TokenLogprob>* out);
void fill_usage(const Usage& u, v1::Usage* out);

}  // namespace llmserve
