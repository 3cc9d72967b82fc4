// Bounds request validation enforces (beyond SamplingParams::validate), set from the engine and
// the server options. Shared by every transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "server/common/bounded_json.h"
#include "server/common/default_sampling.h"

namespace llmserve {

// Longest request id a client may choose (HTTP X-Request-Id, gRPC request_id).
inline constexpr size_t kMaxClientRequestIdBytes = 128;

struct RequestLimits {
  int32_t vocab_size = 0;
  int32_t max_model_len = 2048;  // prompt + max_tokens must fit
  int32_t max_logprobs = 20;
  int32_t max_n = 16;                  // n per prompt
  int32_t max_choices = 64;            // prompts x n
  int32_t max_images_per_request = 8;  // server.max_images_per_request
  int32_t max_stop_strings = 16;
  int32_t max_stop_string_bytes = 512;
  int32_t max_logit_bias = 1024;  // entries
  int32_t max_stop_token_ids = 256;
  int32_t default_completion_max_tokens = 16;  // /v1/completions without max_tokens
  double max_timeout_seconds = 86400;
  int32_t max_grammar_bytes = 64 * 1024;  // a JSON schema, regex or EBNF grammar
  int32_t max_grammar_choices = 256;      // entries of a choice list
  int32_t max_grammar_choice_bytes = 1024;
  // Prompt scoring: n x prompt tokens x (top-N + 1) entries per request
  // (server.max_prompt_logprob_entries).
  int64_t max_prompt_logprob_entries = 1 << 20;
  // Every JSON text of a request (body, JSON-carrying fields): nesting and tree size
  // (server.max_json_depth, server.max_json_memory).
  JsonBounds json_bounds;
  std::string model_name;  // the served name; a request naming another is rejected
  // The model's sampling defaults: readers start a request's params from them.
  SamplingDefaults default_sampling;
};

}  // namespace llmserve
