// Chat replies made under the generic tool format (server/common/tool_calls.h) in OpenAI's
// shapes: message.tool_calls with finish_reason "tool_calls", or, streaming, delta.tool_calls
// pieces (index, id, type and name first, then argument fragments).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/common/tool_calls.h"

namespace llmserve {

// [{"id", "type": "function", "function": {"name", "arguments"}}, ...]
nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls);

// The delta objects that stream `reply` (each to go in its own chunk): its content if any, then
// per call its header and its arguments in fragments of at most `fragment_bytes`.
std::vector<nlohmann::json> tool_reply_deltas(const ToolReply& reply, size_t fragment_bytes = 24);

// A seed for the reply's call ids: from the response id and the choice index.
uint64_t tool_call_id_seed(const std::string& response_id, size_t choice_index);

}  // namespace llmserve
