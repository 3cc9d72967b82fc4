// POST /v1/messages body (Anthropic's Messages API) -> the equivalent /v1/chat/completions body,
// which the chat path then checks, renders with the model's template and tokenizes:
//   system (a string or text blocks)     -> a first system message (volatile lines stripped:
//                                           volatile_system_lines.h)
//   messages[i] user / assistant         -> chat messages; content a string or blocks:
//     text                               -> the message's text (blocks joined)
//     tool_use {id, name, input}         -> an assistant tool call
//     tool_result {tool_use_id, content (string or text blocks), is_error}
//                                        -> a tool message ahead of the user's text; an error's
//                                           text is prefixed "Error: "
//     thinking {thinking}                -> the assistant's reasoning_content
//     redacted_thinking, server tool blocks (server_tool_use, *_tool_result), search_result,
//     container_upload                   -> dropped (nothing a local model can read)
//     image, document                    -> 400 naming the block (no vision yet)
//   a system-role message in `messages` (Claude Code sends one) -> a system message there
//   tools [{name, description, input_schema}] -> chat's function tools; a tool with
//                                           defer_loading: true is left out (the client loads
//                                           it on demand); server tools (a `type` other than
//                                           custom) -> 400 naming tools[i].type
//   tool_choice auto / any / tool {name} / none, disable_parallel_tool_use
//                                        -> auto / required / the named function / none,
//                                           parallel_tool_calls
//   thinking {type: enabled, budget_tokens} / {type: disabled} / adaptive
//                                        -> chat_template_kwargs.enable_thinking true / false /
//                                           the template's default; the reasoning parser splits
//                                           the reply's block into thinking blocks
//   a last assistant message (a prefill)  -> continued: chat's continue_final_message
//   stop_sequences -> stop; max_tokens, temperature, top_p, top_k, model as they are
// metadata, cache_control, service_tier, context_management, output_config and other fields
// are accepted and ignored, as Anthropic accepts them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "server/common/bounded_json.h"
#include "server/common/generation_request.h"
#include "server/common/request_limits.h"
#include "server/http/chat_request.h"

namespace llmserve {

struct MessagesOptions {
  // Lines dropped from system text (server.anthropic_strip_system_lines).
  std::vector<std::string> strip_system_lines = {"x-anthropic-billing-header:"};
};

struct MessagesTranslation {
  nlohmann::ordered_json chat_body;
  bool stream = false;
  std::vector<std::string> stop_sequences;
  // Where each chat message came from: "system", or "messages[i]".
  std::vector<std::string> message_source;
  std::vector<size_t> tool_source;  // chat tools[k] is tools[tool_source[k]]
  // Image blocks: (the chat part "messages[k].content[j]", the block "messages[i].content[b]").
  std::vector<std::pair<std::string, std::string>> image_source;
};

// Checks and translates; errors name the Messages field ("messages[1].content[0].type: ...").
// `count_only`: a count_tokens body (no max_tokens, no stream).
Result<MessagesTranslation> translate_messages_request(std::string_view body,
                                                       const MessagesOptions& options,
                                                       const JsonBounds& bounds = {},
                                                       bool count_only = false);

// A chat-path error with its field named as the Messages request has it.
Status to_messages_error(const Status& chat_error, const MessagesTranslation& t);

// translate_messages_request, then parse_chat_request on the result; errors in Messages terms.
Result<GenerationRequest> parse_messages_request(std::string_view body, const Tokenizer& tokenizer,
                                                 const ChatRenderer& render,
                                                 const RequestLimits& limits,
                                                 const MessagesOptions& options,
                                                 MessagesTranslation* t = nullptr,
                                                 bool count_only = false);

}  // namespace llmserve
