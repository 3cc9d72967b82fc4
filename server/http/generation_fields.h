// The request fields /v1/completions and /v1/chat/completions share: model, sampling, stop,
// streaming, priority, timeout. Pure functions over parsed JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/generate_request.h"
#include "engine/sampling_params.h"
#include "server/http/request_limits.h"

namespace llmserve {

struct GenerationFields {
  std::string model;
  SamplingParams params;
  bool max_tokens_given = false;  // max_tokens / max_completion_tokens present
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int32_t priority = 0;
  std::optional<double> timeout_seconds;
  std::string user;
};

// Reads every shared field. Does not read logprobs (its shape differs between the two APIs).
Status parse_generation_fields(const nlohmann::json& body, const RequestLimits& limits,
                               GenerationFields* out);

// max_tokens 0 (prompt processing only) unless the request scores its prompt: INVALID_ARGUMENT.
Status require_completion(const GenerationFields& fields, bool scores_prompt);

// Prompt of `prompt_tokens` tokens: fills params.max_tokens when not given (`default_max`, or
// the room left when `default_max` <= 0), and rejects prompts that do not fit with OUT_OF_RANGE
// (OpenAI code context_length_exceeded; the message names both numbers).
Status fit_context(int64_t prompt_tokens, const RequestLimits& limits, int32_t default_max,
                   GenerationFields* fields);

// Token ids must lie in [0, vocab_size).
Status check_token_ids(const std::vector<int32_t>& ids, int32_t vocab_size, const char* field);

// One GenerateRequest per prompt, sharing params and deadline.
std::vector<GenerateRequest> make_generate_requests(
    const GenerationFields& fields, std::vector<std::vector<int32_t>> prompts,
    const std::string& external_id, std::optional<std::chrono::steady_clock::time_point> deadline);

}  // namespace llmserve
