// vllm.grpc.engine.GenerateRequest (the gateway's worker protocol) read into the transport-neutral
// GenerationRequest, validated there like every other transport's request. Proto3 zeros mean
// "unset" where the field is not `optional` (top_p, top_k, min_p, the penalties, n), so the
// model's sampling defaults apply as they do over HTTP. Errors: INVALID_ARGUMENT "<field>: ..."
// naming the proto field (sampling_params.*, tokenized.input_ids, mm_inputs, ...), OUT_OF_RANGE
// for a prompt over the context.
#pragma once

#include <string>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/common/generation_request.h"
#include "server/common/request_limits.h"
#include "vllm/grpc/engine/vllm_engine.pb.h"

namespace llmserve {

// `limits.default_completion_max_tokens` is ignored: a request without max_tokens may use the
// room left in the context (as the gateway expects).
Result<GenerationRequest> parse_vllm_request(const ::vllm::grpc::engine::GenerateRequest& r,
                                             const Tokenizer& tokenizer,
                                             const RequestLimits& limits);

}  // namespace llmserve
