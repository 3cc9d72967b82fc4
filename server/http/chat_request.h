// POST /v1/chat/completions body -> the neutral GenerationRequest, its one prompt rendered by the
// chat template and tokenized. Pure; the template is passed in as a function so tests and fuzz
// targets need no model.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/vision/image_placement.h"
#include "server/common/generation_request.h"
#include "server/common/reasoning_parser.h"
#include "server/common/request_limits.h"
#include "server/common/tool_calls.h"

namespace llmserve {

// Renders validated messages (a JSON array of {"role", "content": string, ...}) to the prompt
// text; `variables` (an object) are more template variables: `tools` (an array) when tools are
// offered, and the request's chat_template_kwargs. tool_format: how the template writes tool
// calls; reasoning: the resolved reasoning parser (reasoning_parser.h) and whether the template
// writes think tags. Empty when the model has no chat template (chat is then rejected). Tests
// and fuzz targets pass any (messages, add_generation_prompt) callable.
using ChatRenderFn =
    std::function<Result<std::string>(const nlohmann::json& messages, bool add_generation_prompt,
                                      const nlohmann::ordered_json& variables)>;

struct ChatRenderer {
  ChatRenderFn fn;
  ToolFormat tool_format = ToolFormat::kGeneric;
  ReasoningParser reasoning = ReasoningParser::kNone;
  bool template_thinks = false;
  // A model with a vision tower: its image placeholder text and expansion; nullopt without one
  // (image parts are then refused).
  std::optional<vision::ImageTokenText> images;

  ChatRenderer() = default;
  ChatRenderer(ChatRenderFn f, ToolFormat format,
               ReasoningParser reasoning_parser = ReasoningParser::kNone, bool thinks = false)
      : fn(std::move(f)),
        tool_format(format),
        reasoning(reasoning_parser),
        template_thinks(thinks) {}
  template <typename F>
  requires std::is_invocable_r_v < Result<std::string>, F,
  const nlohmann::json&, bool > ChatRenderer(F f)  // NOLINT(google-explicit-constructor)
      : fn([f = std::move(f)](const nlohmann::json& m, bool add, const nlohmann::ordered_json&) {
                           return f(m, add);
                         }) {}

  explicit operator bool() const { return static_cast<bool>(fn); }
  Result<std::string> operator()(
      const nlohmann::json& messages, bool add_generation_prompt,
      const nlohmann::ordered_json& variables = nlohmann::ordered_json::object()) const {
    return fn(messages, add_generation_prompt, variables);
  }
};

// Checks `messages` (non-empty; roles system/developer/user/assistant/tool; content a string,
// null for assistant, or a list of {"type": "text"} parts, flattened to a string). An
// assistant's earlier reasoning (reasoning_content, or vLLM's `reasoning`) reaches the template
// as reasoning_content.
// A tool call's JSON `arguments` text is parsed within `bounds` (past them: INVALID_ARGUMENT).
// images: where image_url parts go (the message's content then stays a list of text and
// {"type": "image"} parts for the template); null refuses them.
Result<nlohmann::json> normalize_chat_messages(const nlohmann::json& messages,
                                               const JsonBounds& bounds,
                                               std::vector<ImageInput>* images = nullptr);

// How the messages become a prompt: `add_generation_prompt` (default true) and vLLM's
// `continue_final_message` (default false): the last message, an assistant's, is continued
// (server/common/continue_final_message.h) instead of a new turn being opened. Refused (400
// naming the field): continue_final_message with add_generation_prompt: true, or with a last
// message that is not an assistant's.
struct ChatPromptMode {
  bool add_generation_prompt = true;
  bool continue_final_message = false;
};
Result<ChatPromptMode> read_chat_prompt_mode(const nlohmann::json& body,
                                             const nlohmann::json& messages);

// The prompt text for normalized `messages` in `mode`.
Result<std::string> render_chat_prompt(
    const ChatRenderer& render, const nlohmann::json& messages, ChatPromptMode mode,
    const nlohmann::ordered_json& variables = nlohmann::ordered_json::object());

// The result's prompt_texts[0] is the rendered prompt, prompt_token_ids[0] its tokens;
// `logprobs: true` with `top_logprobs: N` reads as logprobs = N (0 without top_logprobs).
// chat_template_kwargs (an object) become template variables, except the ones the server sets
// (messages, tools, documents, add_generation_prompt, bos_token, eos_token): a 400 naming it.
// With a reasoning parser, `reasoning` says where the reply starts, and a grammar of a template
// that writes think tags lets the reasoning block come first (reasoning_grammar).
Result<GenerationRequest> parse_chat_request(std::string_view body, const Tokenizer& tokenizer,
                                             const ChatRenderer& render,
                                             const RequestLimits& limits);

}  // namespace llmserve
