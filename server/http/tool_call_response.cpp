#include "server/http/tool_call_response.h"

#include <functional>

namespace llmserve {

using nlohmann::json;

json tool_calls_json(const std::vector<ToolCall>& calls) {
  json out = json::array();
  for (const ToolCall& c : calls) {
    out.push_back({{"id", c.id},
                   {"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return out;
}

std::vector<json> tool_reply_deltas(const ToolReply& reply, size_t fragment_bytes) {
  std::vector<json> deltas;
  if (!reply.content.empty()) deltas.push_back({{"content", reply.content}});
  if (!reply.is_call()) return deltas;
  fragment_bytes = std::max<size_t>(fragment_bytes, 1);
  for (size_t i = 0; i < reply.calls.size(); ++i) {
    const ToolCall& c = reply.calls[i];
    deltas.push_back({{"tool_calls",
                       {{{"index", i},
                         {"id", c.id},
                         {"type", "function"},
                         {"function", {{"name", c.name}, {"arguments", ""}}}}}}});
    const std::string& args = c.arguments;
    size_t off = 0;
    while (off < args.size()) {
      // Fragments split the JSON text, never a UTF-8 character.
      size_t len = std::min(fragment_bytes, args.size() - off);
      while (off + len < args.size() &&
             (static_cast<unsigned char>(args[off + len]) & 0xC0) == 0x80) {
        ++len;
      }
      deltas.push_back(
          {{"tool_calls", {{{"index", i}, {"function", {{"arguments", args.substr(off, len)}}}}}}});
      off += len;
    }
  }
  return deltas;
}

uint64_t tool_call_id_seed(const std::string& response_id, size_t choice_index) {
  return std::hash<std::string>{}(response_id) ^ (0x9E3779B97F4A7C15ull * (choice_index + 1));
}

}  // namespace llmserve
