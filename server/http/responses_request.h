// POST /v1/responses body (OpenAI's Responses API, stateless) -> the equivalent
// /v1/chat/completions body, which the chat path then parses, renders and generates:
//   instructions             -> a first system message
//   input (string)           -> one user message
//   input items              -> message -> a message (input_text / output_text parts flattened);
//                               function_call -> an assistant tool call (consecutive calls make
//                               one assistant message); function_call_output -> a tool message;
//                               reasoning -> dropped
//   tools [{type: function, name, description, parameters, strict}] -> chat's nested shape
//   tool_choice {type: function, name} -> {type: function, function: {name}}
//   text.format (text / json_object / json_schema) -> response_format
//   max_output_tokens        -> max_tokens; the sampling fields as they are
//   structured_outputs, guided_*, json_schema, grammar -> as they are (chat reads them)
// `store: true`, `previous_response_id`, `conversation` and `background: true` ask for state
// this server does not keep: a 400 naming the field. Other unknown fields are ignored.
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

struct ResponsesTranslation {
  nlohmann::ordered_json chat_body;  // the /v1/chat/completions body
  // Where each chat message came from: its input item (-1: `instructions`). An assistant
  // message made of function_call items starts at its first one.
  std::vector<int> message_source;
  // The request fields a Response object repeats (instructions, tools, tool_choice, text,
  // max_output_tokens, parallel_tool_calls, metadata, user), as the caller sent them.
  nlohmann::ordered_json echo = nlohmann::ordered_json::object();
};

// Checks and translates; errors name the Responses field ("input[2].call_id: ...").
// The body is parsed within `bounds` (server/common/bounded_json.h).
Result<ResponsesTranslation> translate_responses_request(std::string_view body,
                                                         const JsonBounds& bounds = {});

// A chat-path error (INVALID_ARGUMENT / OUT_OF_RANGE "<field>: ...") with its field renamed to
// the Responses field it came from: messages[k] -> input[i] (or instructions), tools[i].function
// -> tools[i], response_format.json_schema -> text.format, max_tokens -> max_output_tokens.
Status to_responses_error(const Status& chat_error, const ResponsesTranslation& t);

// The chat path's context-length error (OUT_OF_RANGE "messages: ... tokens (P in the messages,
// M in the completion) ...") in Responses terms: it names `input` when the input alone is too
// long (`input_fits` false), else `max_output_tokens`, the part to reduce.
Status responses_context_error(const Status& chat_error, bool input_fits);

// translate_responses_request, then parse_chat_request on the result; errors in Responses
// terms. `t` (optional) receives the translation.
Result<GenerationRequest> parse_responses_request(std::string_view body, const Tokenizer& tokenizer,
                                                  const ChatRenderer& render,
                                                  const RequestLimits& limits,
                                                  ResponsesTranslation* t = nullptr);

}  // namespace llmserve
