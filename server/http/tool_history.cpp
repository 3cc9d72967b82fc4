#include "server/http/tool_history.h"

#include <set>
#include <string>

#include "server/common/field_checks.h"

namespace llmserve {

using nlohmann::json;

namespace {

bool has(const json& object, const char* key) {
  return object.contains(key) && !object[key].is_null();
}

// One assistant tool call: {"id", "type": "function", "function": {"name", "arguments"}}.
Status check_call(const json& call, const std::string& where,
                  const std::vector<ToolFunction>& tools) {
  if (!call.is_object()) return field_error(where, "expected a tool call object");
  if (!has(call, "id")) return field_error(where + ".id", "is required");
  if (!call["id"].is_string()) return field_error(where + ".id", "expected a string");
  if (has(call, "type") && call["type"] != "function") {
    return field_error(where + ".type", "must be \"function\"");
  }
  if (!has(call, "function")) return field_error(where + ".function", "is required");
  const json& f = call["function"];
  if (!f.is_object()) return field_error(where + ".function", "expected an object");
  if (!has(f, "name")) return field_error(where + ".function.name", "is required");
  if (!f["name"].is_string()) return field_error(where + ".function.name", "expected a string");
  if (has(f, "arguments") && !f["arguments"].is_string() && !f["arguments"].is_object()) {
    return field_error(where + ".function.arguments", "expected a JSON string");
  }
  if (!tools.empty()) {
    const std::string name = f["name"].get<std::string>();
    bool offered = false;
    for (const ToolFunction& t : tools) offered = offered || t.name == name;
    if (!offered) {
      return field_error(where + ".function.name", "the function '" + name + "' is not in tools");
    }
  }
  return Status::ok();
}

}  // namespace

Status check_tool_history(const json& messages, const std::vector<ToolFunction>& tools) {
  std::set<std::string> call_ids;  // the ids of the calls made so far
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    const std::string role = m.value("role", "");
    if (role == "assistant" && has(m, "tool_calls") && m["tool_calls"].is_array()) {
      const json& calls = m["tool_calls"];
      for (size_t k = 0; k < calls.size(); ++k) {
        LLMSERVE_RETURN_IF_ERROR(
            check_call(calls[k], where + ".tool_calls[" + std::to_string(k) + "]", tools));
        call_ids.insert(calls[k]["id"].get<std::string>());
      }
    } else if (role == "tool") {
      if (!has(m, "tool_call_id")) {
        return field_error(where + ".tool_call_id", "is required for a tool message");
      }
      if (!m["tool_call_id"].is_string()) {
        return field_error(where + ".tool_call_id", "expected a string");
      }
      const std::string id = m["tool_call_id"].get<std::string>();
      if (!call_ids.contains(id)) {
        return field_error(where + ".tool_call_id",
                           "'" + id +
                               "' answers no tool call: a tool message must follow an assistant "
                               "message whose tool_calls has this id");
      }
    }
  }
  return Status::ok();
}

}  // namespace llmserve
