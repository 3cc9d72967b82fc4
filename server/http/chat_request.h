// POST /v1/chat/completions body -> the neutral GenerationRequest, its one prompt rendered by the
// chat template and tokenized. Pure; the template is passed in as a function so tests and fuzz
// targets need no model.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/common/generation_request.h"
#include "server/common/request_limits.h"
#include "server/common/tool_calls.h"

namespace llmserve {

// Renders validated messages (a JSON array of {"role", "content": string, ...}) to the prompt
// text; `tools` (an array, or null) is the template's `tools` variable. tool_format: how the
// template writes tool calls. Empty when the model has no chat template (chat is then
// rejected). Tests and fuzz targets pass any (messages, add_generation_prompt) callable.
using ChatRenderFn =
    std::function<Result<std::string>(const nlohmann::json& messages, bool add_generation_prompt,
                                      const nlohmann::ordered_json& tools)>;

struct ChatRenderer {
  ChatRenderFn fn;
  ToolFormat tool_format = ToolFormat::kGeneric;

  ChatRenderer() = default;
  ChatRenderer(ChatRenderFn f, ToolFormat format) : fn(std::move(f)), tool_format(format) {}
  template <typename F>
  requires std::is_invocable_r_v < Result<std::string>, F,
  const nlohmann::json&, bool > ChatRenderer(F f)  // NOLINT(google-explicit-constructor)
      : fn([f = std::move(f)](const nlohmann::json& m, bool add, const nlohmann::ordered_json&) {
                           return f(m, add);
                         }) {}

  explicit operator bool() const { return static_cast<bool>(fn); }
  Result<std::string> operator()(const nlohmann::json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& tools = nullptr) const {
    return fn(messages, add_generation_prompt, tools);
  }
};

// Checks `messages` (non-empty; roles system/developer/user/assistant/tool; content a string,
// null for assistant, or a list of {"type": "text"} parts, flattened to a string).
Result<nlohmann::json> normalize_chat_messages(const nlohmann::json& messages);

// The result's prompt_texts[0] is the rendered prompt, prompt_token_ids[0] its tokens;
// `logprobs: true` with `top_logprobs: N` reads as logprobs = N (0 without top_logprobs).
Result<GenerationRequest> parse_chat_request(std::string_view body, const Tokenizer& tokenizer,
                                             const ChatRenderer& render,
                                             const RequestLimits& limits);

}  // namespace llmserve
