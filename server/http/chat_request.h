// POST /v1/chat/completions body -> the neutral GenerationRequest, its one prompt rendered by the
// chat template and tokenized. Pure; the template is passed in as a function so tests and fuzz
// targets need no model.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/common/generation_request.h"
#include "server/common/request_limits.h"

namespace llmserve {

// Renders validated messages (a JSON array of {"role", "content": string, ...}) to the prompt
// text. Null when the model has no chat template (chat is then rejected).
using ChatRenderer =
    std::function<Result<std::string>(const nlohmann::json& messages, bool add_generation_prompt)>;

// Checks `messages` (non-empty; roles system/developer/user/assistant/tool; content a string,
// null for assistant, or a list of {"type": "text"} parts, flattened to a string).
Result<nlohmann::json> normalize_chat_messages(const nlohmann::json& messages);

// The result's prompt_texts[0] is the rendered prompt, prompt_token_ids[0] its tokens;
// `logprobs: true` with `top_logprobs: N` reads as logprobs = N (0 without top_logprobs).
Result<GenerationRequest> parse_chat_request(std::string_view body, const Tokenizer& tokenizer,
                                             const ChatRenderer& render,
                                             const RequestLimits& limits);

}  // namespace llmserve
