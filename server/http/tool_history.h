// The tool history of a chat request, checked as OpenAI checks it: every assistant tool call
// has an id and a function with a name (one of `tools` when tools are given), and every `tool`
// message answers one of those calls by its tool_call_id. A breach is INVALID_ARGUMENT naming
// the field ("messages[3].tool_call_id: ...").
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "server/common/tool_calls.h"

namespace llmserve {

// `messages`: the request's messages as sent (an array of objects with a string role, as
// normalize_chat_messages accepts them). `tools`: the request's tools (empty: none given, and
// call names are not checked).
Status check_tool_history(const nlohmann::json& messages, const std::vector<ToolFunction>& tools);

}  // namespace llmserve
