// POST /v1/chat/completions body -> rendered, tokenized prompt + shared fields. Pure; the chat
// template is passed in as a function so tests and fuzz targets need no model.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/http/generation_fields.h"
#include "server/http/request_limits.h"

namespace llmserve {

// Renders validated messages (a JSON array of {"role", "content": string, ...}) to the prompt
// text. Null when the model has no chat template (chat is then rejected).
using ChatRenderer =
    std::function<Result<std::string>(const nlohmann::json& messages, bool add_generation_prompt)>;

struct ParsedChat {
  GenerationFields fields;
  std::vector<int32_t> prompt_token_ids;
  std::string prompt_text;
  bool logprobs = false;     // `logprobs: true`
  int32_t top_logprobs = 0;  // `top_logprobs: N`, needs logprobs
};

// Checks `messages` (non-empty; roles system/developer/user/assistant/tool; content a string,
// null for assistant, or a list of {"type": "text"} parts, flattened to a string).
Result<nlohmann::json> normalize_chat_messages(const nlohmann::json& messages);

Result<ParsedChat> parse_chat_request(std::string_view body, const Tokenizer& tokenizer,
                                      const ChatRenderer& render, const RequestLimits& limits);

}  // namespace llmserve
