// POST /v1/completions body -> prompts + shared fields. Pure; usable from fuzz targets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/http/generation_fields.h"
#include "server/http/request_limits.h"

namespace llmserve {

struct ParsedCompletion {
  GenerationFields fields;
  std::vector<std::vector<int32_t>> prompts;  // token ids, one list per prompt (>= 1)
  int32_t logprobs = -1;                      // `logprobs: N`; -1 = none
  int32_t prompt_logprobs = -1;               // vLLM's `prompt_logprobs: N` as asked; -1 = none
  bool echo = false;                          // the prompt comes back before the completion
  std::vector<std::string> echo_texts;        // with echo: each prompt's text
};

// `prompt` may be a string, a list of strings, a list of token ids, or a list of such lists.
// Errors: INVALID_ARGUMENT (message "<field>: ..."), OUT_OF_RANGE (context length).
Result<ParsedCompletion> parse_completion_request(std::string_view body, const Tokenizer& tokenizer,
                                                  const RequestLimits& limits);

}  // namespace llmserve
