#include "server/common/tool_calls.h"

#include <algorithm>
#include <random>
#include <set>

#include "server/common/cut_json.h"
#include "server/common/mistral_tool_calls.h"
#include "server/common/schema_definitions.h"

namespace llmserve {

using json = nlohmann::ordered_json;

namespace {

Status tool_error(const std::string& field, const std::string& message) {
  return invalid_argument(field + ": " + message);
}

bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<ToolFunction> parse_tool(const json& t, size_t i) {
  const std::string where = "tools[" + std::to_string(i) + "]";
  if (!t.is_object()) return tool_error(where, "expected an object");
  if (!t.contains("type") || t["type"] != "function") {
    return tool_error(where + ".type", "must be \"function\" (the only tool type)");
  }
  if (!t.contains("function") || !t["function"].is_object()) {
    return tool_error(where + ".function", "is required and must be an object");
  }
  const json& f = t["function"];
  ToolFunction out;
  if (!f.contains("name") || !f["name"].is_string()) {
    return tool_error(where + ".function.name", "is required and must be a string");
  }
  out.name = f["name"].get<std::string>();
  if (!valid_function_name(out.name)) {
    return tool_error(where + ".function.name",
                      "'" + out.name + "' must be 1-64 of a-z, A-Z, 0-9, _ and -");
  }
  if (f.contains("description") && !f["description"].is_null()) {
    if (!f["description"].is_string()) {
      return tool_error(where + ".function.description", "expected a string");
    }
    out.description = f["description"].get<std::string>();
  }
  if (f.contains("parameters") && !f["parameters"].is_null()) {
    if (!f["parameters"].is_object()) {
      return tool_error(where + ".function.parameters", "expected a JSON Schema object");
    }
    out.parameters = f["parameters"];
  } else {
    out.parameters = json{{"type", "object"}, {"properties", json::object()}};
  }
  return out;
}

json call_schema(const ToolFunction& f) {
  return json{{"type", "object"},
              {"properties", {{"name", {{"const", f.name}}}, {"arguments", f.parameters}}},
              {"required", {"name", "arguments"}},
              {"additionalProperties", false}};
}

std::string call_id(uint64_t seed, size_t index) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + index + 1);
  static const char* kHex = "0123456789abcdef";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kHex[rng() & 15];
  return id;
}

}  // namespace

Result<ToolRequest> parse_tool_request(const json& body, size_t max_tools) {
  ToolRequest out;
  if (body.contains("tools") && !body["tools"].is_null()) {
    const json& tools = body["tools"];
    if (!tools.is_array()) return tool_error("tools", "expected a list of tools");
    if (tools.size() > max_tools) {
      return tool_error("tools", "at most " + std::to_string(max_tools) + " tools are allowed");
    }
    std::set<std::string> names;
    for (size_t i = 0; i < tools.size(); ++i) {
      LLMSERVE_ASSIGN_OR_RETURN(ToolFunction f, parse_tool(tools[i], i));
      if (!names.insert(f.name).second) {
        return tool_error("tools[" + std::to_string(i) + "].function.name",
                          "'" + f.name + "' is defined twice");
      }
      out.tools.push_back(std::move(f));
    }
  }
  out.choice = out.tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const json& c = body["tool_choice"];
    if (c.is_string()) {
      const std::string s = c.get<std::string>();
      if (s == "none") {
        out.choice = ToolChoice::kNone;
      } else if (s == "auto") {
        out.choice = out.tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
      } else if (s == "required") {
        out.choice = ToolChoice::kRequired;
      } else {
        return tool_error("tool_choice", "'" + s +
                                             "' is not one of none, auto, required or "
                                             "{\"type\": \"function\", \"function\": {\"name\"}}");
      }
    } else if (c.is_object()) {
      if (!c.contains("type") || c["type"] != "function" || !c.contains("function") ||
          !c["function"].is_object() || !c["function"].contains("name") ||
          !c["function"]["name"].is_string()) {
        return tool_error("tool_choice",
                          "expected {\"type\": \"function\", \"function\": {\"name\": ...}}");
      }
      out.choice = ToolChoice::kNamed;
      out.named = c["function"]["name"].get<std::string>();
      bool found = false;
      for (const ToolFunction& f : out.tools) found = found || f.name == out.named;
      if (!found) {
        return tool_error("tool_choice", "the function '" + out.named + "' is not in tools");
      }
    } else {
      return tool_error("tool_choice", "expected a string or an object");
    }
    if (out.choice == ToolChoice::kRequired && out.tools.empty()) {
      return tool_error("tool_choice", "'required' needs at least one tool in tools");
    }
  }
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null()) {
    if (!body["parallel_tool_calls"].is_boolean()) {
      return tool_error("parallel_tool_calls", "expected a boolean");
    }
    out.parallel_tool_calls = body["parallel_tool_calls"].get<bool>();
  }
  return out;
}

ToolFormat detect_tool_format(std::string_view source) {
  if (is_mistral_tool_template(source)) {
    return is_mistral_args_template(source) ? ToolFormat::kMistralArgs : ToolFormat::kMistral;
  }
  const bool hermes = source.find("<tool_call>") != std::string_view::npos &&
                      source.find("tools") != std::string_view::npos;
  return hermes ? ToolFormat::kHermes : ToolFormat::kGeneric;
}

json tools_for_template(const ToolRequest& request) {
  json list = json::array();
  for (const ToolFunction& f : request.tools) {
    if (request.choice == ToolChoice::kNamed && f.name != request.named) continue;
    json fn = {{"name", f.name}};
    if (!f.description.empty()) fn["description"] = f.description;
    fn["parameters"] = f.parameters;
    list.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return list;
}

namespace {

// One call to any offered function (only the named one under a named choice); the parameters'
// definitions go to `defs`, the root's "$defs".
json any_call_schema(const ToolRequest& request, json& defs) {
  auto one = [&](const ToolFunction& f) {
    json call = call_schema(f);
    hoist_schema_definitions(call["properties"]["arguments"], defs);
    return call;
  };
  if (request.choice == ToolChoice::kNamed) {
    for (const ToolFunction& f : request.tools) {
      if (f.name == request.named) return one(f);
    }
  }
  if (request.tools.size() == 1) return one(request.tools.front());
  json any = {{"anyOf", json::array()}};
  for (const ToolFunction& f : request.tools) any["anyOf"].push_back(one(f));
  return any;
}

}  // namespace

Status set_reply_format(const GrammarSpec& text_format, ToolFormat format, ToolRequest* request) {
  if (request->choice != ToolChoice::kAuto) return Status::ok();
  const std::string also = "with tool_choice auto, cannot be combined with " + text_format.field;
  if (format != ToolFormat::kGeneric) {
    return tool_error("tools", also +
                                   " for this model (its tool calls are free text): use "
                                   "tool_choice required or a named function, or no " +
                                   text_format.field);
  }
  if (text_format.kind == GrammarKind::kJsonObject) {
    request->reply_schema = json{{"type", "object"}};
  } else if (text_format.kind == GrammarKind::kJsonSchema) {
    json schema = json::parse(text_format.text, nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) return tool_error(text_format.field, "invalid JSON Schema");
    request->reply_schema = std::move(schema);
  } else {
    return tool_error("tools", also + " of type " + grammar_kind_name(text_format.kind) +
                                   " (only json_schema or json_object)");
  }
  return Status::ok();
}

int32_t max_tool_calls(const ToolRequest& request, ToolFormat format) {
  if (request.choice == ToolChoice::kNamed || !request.parallel_tool_calls) return 1;
  return format == ToolFormat::kHermes ? kMaxParallelToolCallsHermes : kMaxParallelToolCalls;
}

std::optional<GrammarSpec> tool_call_grammar(const ToolRequest& request, ToolFormat format) {
  if (format == ToolFormat::kMistral || format == ToolFormat::kMistralArgs) {
    return mistral_tool_grammar(request, format == ToolFormat::kMistralArgs);
  }
  if (format == ToolFormat::kHermes) {
    if (request.choice == ToolChoice::kAuto) return std::nullopt;
    GrammarSpec spec;
    spec.kind = GrammarKind::kTaggedJson;
    json defs = json::object();
    json call = any_call_schema(request, defs);
    if (!defs.empty()) call["$defs"] = std::move(defs);
    spec.text = call.dump();
    spec.choices = {"<tool_call>\n", "\n</tool_call>"};
    spec.max_repeats = max_tool_calls(request, format);
    spec.field = "tools";
    return spec;
  }
  // Definitions of every nested schema (the tools' parameters, the answer's) go to the root.
  json defs = json::object();
  json calls = {{"type", "array"},
                {"items", any_call_schema(request, defs)},
                {"minItems", 1},
                {"maxItems", max_tool_calls(request, format)}};
  json schema = {{"type", "object"},
                 {"properties", {{"tool_calls", calls}}},
                 {"required", {"tool_calls"}},
                 {"additionalProperties", false}};
  if (request.choice == ToolChoice::kAuto) {
    json answer = request.reply_schema ? *request.reply_schema : json{{"type", "string"}};
    hoist_schema_definitions(answer, defs);
    json reply = {{"type", "object"},
                  {"properties", {{"response", std::move(answer)}}},
                  {"required", {"response"}},
                  {"additionalProperties", false}};
    schema = json{{"anyOf", {schema, reply}}};
  }
  if (!defs.empty()) schema["$defs"] = std::move(defs);
  GrammarSpec spec;
  spec.kind = GrammarKind::kJsonSchema;
  spec.text = schema.dump();
  spec.field = "tools";
  return spec;
}

std::string tool_system_prompt(const ToolRequest& request) {
  json list = json::array();
  for (const ToolFunction& f : request.tools) {
    if (request.choice == ToolChoice::kNamed && f.name != request.named) continue;
    json t = {{"name", f.name}, {"parameters", f.parameters}};
    if (!f.description.empty()) t["description"] = f.description;
    list.push_back(std::move(t));
  }
  std::string text =
      "You can call these tools; each one's arguments follow its JSON Schema:\n" + list.dump(2) +
      "\n\nReply with JSON only. To call tools: "
      "{\"tool_calls\": [{\"name\": \"<tool name>\", \"arguments\": {<the arguments>}}]}";
  if (request.choice == ToolChoice::kAuto && request.reply_schema) {
    text +=
        ". To answer without a tool: {\"response\": <your answer, JSON following this "
        "schema: " +
        request.reply_schema->dump() + ">}";
  } else if (request.choice == ToolChoice::kAuto) {
    text += ". To answer without a tool: {\"response\": \"<your answer>\"}";
  }
  text += max_tool_calls(request, ToolFormat::kGeneric) > 1
              ? ". You may call several tools at once."
              : ". Make exactly one call.";
  return text;
}

void add_tool_prompt(const ToolRequest& request, nlohmann::json& messages) {
  const std::string prompt = tool_system_prompt(request);
  if (!messages.empty() && messages[0].value("role", "") == "system" &&
      messages[0]["content"].is_string()) {
    messages[0]["content"] = messages[0]["content"].get<std::string>() + "\n\n" + prompt;
    return;
  }
  messages.insert(messages.begin(), nlohmann::json{{"role", "system"}, {"content", prompt}});
}

namespace {

// Whether the text from `pos` on (after whitespace) opens a JSON object.
bool starts_json_object(const std::string& text, size_t pos) {
  const size_t first = text.find_first_not_of(" \n\t\r", pos);
  return first != std::string::npos && text[first] == '{';
}

// An unclosed block from `body` on that a cut ended: nothing yet, or a JSON object begun.
bool cut_call(const std::string& text, size_t body) {
  return text.find_first_not_of(" \n\t\r", body) == std::string::npos ||
         starts_json_object(text, body);
}

bool is_call_json(const json& c) {
  return c.is_object() && c.contains("name") && c["name"].is_string();
}

ToolCall call_from_json(const json& c, uint64_t id_seed, size_t index) {
  ToolCall call;
  call.id = call_id(id_seed, index);
  call.name = c["name"].get<std::string>();
  const char* args_key = c.contains("arguments") ? "arguments" : "parameters";
  call.arguments = c.contains(args_key) ? c[args_key].dump() : "{}";
  return call;
}

// Drops the start of `tag` that a cut left at the end of `content` ("...<tool_c").
void drop_cut_tag(std::string_view tag, std::string* content) {
  const size_t end = content->find_last_not_of(" \n\t\r");
  if (end == std::string::npos) return;
  for (size_t len = std::min(tag.size() - 1, end + 1); len >= 1; --len) {
    if (std::string_view(*content).substr(end + 1 - len, len) == tag.substr(0, len)) {
      content->erase(end + 1 - len);
      return;
    }
  }
}

// <tool_call>{"name": ..., "arguments": {...}}</tool_call> blocks; the text outside them is
// the content. A block cut short at the end (no closing tag, a JSON object begun) is dropped.
ToolReply parse_hermes_reply(const std::string& text, uint64_t id_seed) {
  static constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
  ToolReply out;
  std::string content;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t open = text.find(kOpen, pos);
    if (open == std::string::npos) {
      content += text.substr(pos);
      break;
    }
    content += text.substr(pos, open - pos);
    const size_t body = open + kOpen.size();
    const size_t close = text.find(kClose, body);
    if (close == std::string::npos && cut_call(text, body)) {
      // A block cut short: its call if the JSON was complete (the closing tag cut), else none.
      std::string rest = text.substr(body);
      drop_cut_tag(kClose, &rest);
      const json j = json::parse(rest, nullptr, /*allow_exceptions=*/false);
      if (is_call_json(j)) out.calls.push_back(call_from_json(j, id_seed, out.calls.size()));
      break;
    }
    const json j = json::parse(
        text.substr(body, close == std::string::npos ? std::string::npos : close - body), nullptr,
        /*allow_exceptions=*/false);
    if (is_call_json(j)) {
      out.calls.push_back(call_from_json(j, id_seed, out.calls.size()));
    } else {
      content += text.substr(
          open, close == std::string::npos ? std::string::npos : close + kClose.size() - open);
    }
    if (close == std::string::npos) break;
    pos = close + kClose.size();
  }
  drop_cut_tag(kOpen, &content);
  const size_t first = content.find_first_not_of(" \n\t\r");
  const size_t last = content.find_last_not_of(" \n\t\r");
  out.content = first == std::string::npos ? "" : content.substr(first, last - first + 1);
  return out;
}

// A generic reply that does not parse whole: cut short. The calls complete before the cut, or
// the "response" text up to it; never the JSON wrapper as content.
ToolReply parse_cut_generic_reply(const std::string& text, uint64_t id_seed) {
  ToolReply out;
  if (const auto calls = first_member_value(text, "tool_calls"); calls && text[*calls] == '[') {
    for (const json& c : complete_array_items(text, *calls)) {
      if (is_call_json(c)) out.calls.push_back(call_from_json(c, id_seed, out.calls.size()));
    }
    return out;
  }
  if (const auto response = first_member_value(text, "response")) {
    out.content = string_prefix(text, *response).value_or("");
    return out;
  }
  if (!starts_json_object(text, 0)) out.content = text;  // not the reply format at all
  return out;
}

}  // namespace

ToolReply parse_tool_reply(const std::string& text, uint64_t id_seed, ToolFormat format) {
  if (format == ToolFormat::kMistral || format == ToolFormat::kMistralArgs) {
    return parse_mistral_reply(text, id_seed);
  }
  if (format == ToolFormat::kHermes) return parse_hermes_reply(text, id_seed);
  ToolReply out;
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return parse_cut_generic_reply(text, id_seed);
  if (j.is_object() && j.contains("tool_calls") && j["tool_calls"].is_array()) {
    for (const json& c : j["tool_calls"]) {
      if (is_call_json(c)) out.calls.push_back(call_from_json(c, id_seed, out.calls.size()));
    }
    if (!out.calls.empty()) return out;
  }
  if (j.is_object() && j.contains("response") && j["response"].is_string()) {
    out.content = j["response"].get<std::string>();
    return out;
  }
  if (j.is_object() && j.size() == 1 && j.contains("response")) {  // under reply_schema
    out.content = j["response"].dump();
    return out;
  }
  out.content = text;
  return out;
}

std::string tool_calls_as_reply_text(const nlohmann::json& tool_calls) {
  json calls = json::array();
  if (tool_calls.is_array()) {
    for (const nlohmann::json& c : tool_calls) {
      if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
      const nlohmann::json& f = c["function"];
      json args = json::object();
      if (f.contains("arguments") && f["arguments"].is_string()) {
        args = json::parse(f["arguments"].get<std::string>(), nullptr, false);
        if (args.is_discarded()) args = f["arguments"];
      } else if (f.contains("arguments")) {
        args = f["arguments"];
      }
      calls.push_back({{"name", f.value("name", "")}, {"arguments", args}});
    }
  }
  return json{{"tool_calls", calls}}.dump();
}

}  // namespace llmserve
