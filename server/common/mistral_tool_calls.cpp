#include "server/common/mistral_tool_calls.h"

#include <random>

#include "server/common/cut_json.h"

namespace llmserve {

namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kCalls = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kSpace = " \t\n\r";

std::string trimmed(std::string_view s) {
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return "";
  return std::string(s.substr(first, s.find_last_not_of(kSpace) - first + 1));
}

// The functions a reply may call (only the named one under a named choice).
std::vector<const ToolFunction*> offered(const ToolRequest& request) {
  std::vector<const ToolFunction*> out;
  for (const ToolFunction& f : request.tools) {
    if (request.choice != ToolChoice::kNamed || f.name == request.named) out.push_back(&f);
  }
  return out;
}

json sequence(json elements) {
  return {{"type", "sequence"}, {"elements", std::move(elements)}};
}

json const_string(std::string_view s) {
  return {{"type", "const_string"}, {"value", s}};
}

ToolCall make_call(std::string name, const json& arguments, uint64_t seed, size_t index) {
  ToolCall call;
  call.id = mistral_call_id(seed, index);
  call.name = std::move(name);
  call.arguments = arguments.is_string() ? arguments.get<std::string>() : arguments.dump();
  return call;
}

}  // namespace

bool is_mistral_tool_template(std::string_view source) {
  return source.find(kCalls) != std::string_view::npos &&
         source.find("tools") != std::string_view::npos;
}

bool is_mistral_args_template(std::string_view source) {
  return is_mistral_tool_template(source) && source.find(kArgs) != std::string_view::npos;
}

std::optional<GrammarSpec> mistral_tool_grammar(const ToolRequest& request, bool args_form) {
  if (request.choice == ToolChoice::kAuto || request.choice == ToolChoice::kNone) {
    return std::nullopt;
  }
  const int32_t max_calls = max_tool_calls(request, ToolFormat::kMistral);
  json format;
  if (args_form) {
    json one = {{"type", "or"}, {"elements", json::array()}};
    for (const ToolFunction* f : offered(request)) {
      one["elements"].push_back(
          sequence({const_string(std::string(kCalls) + f->name + std::string(kArgs)),
                    {{"type", "json_schema"}, {"json_schema", f->parameters}}}));
    }
    format =
        max_calls <= 1
            ? one
            : sequence(
                  {one,
                   {{"type", "repeat"}, {"min", 0}, {"max", max_calls - 1}, {"content", one}}});
  } else {
    json items = {{"anyOf", json::array()}};
    for (const ToolFunction* f : offered(request)) {
      items["anyOf"].push_back(
          {{"type", "object"},
           {"properties", {{"name", {{"const", f->name}}}, {"arguments", f->parameters}}},
           {"required", {"name", "arguments"}},
           {"additionalProperties", false}});
    }
    const json calls = {
        {"type", "array"}, {"items", items}, {"minItems", 1}, {"maxItems", max_calls}};
    format = sequence({const_string(kCalls), {{"type", "json_schema"}, {"json_schema", calls}}});
  }
  GrammarSpec spec;
  spec.kind = GrammarKind::kStructuralTag;
  spec.text = json{{"type", "structural_tag"}, {"format", std::move(format)}}.dump();
  spec.field = "tools";
  return spec;
}

ToolReply parse_mistral_reply(const std::string& text, uint64_t id_seed) {
  ToolReply out;
  size_t at = text.find(kCalls);
  out.content = trimmed(std::string_view(text).substr(0, at));
  while (at != std::string::npos) {
    const size_t body = text.find_first_not_of(kSpace, at + kCalls.size());
    if (body == std::string::npos) break;
    const size_t next = text.find(kCalls, body);
    const std::string_view block =
        std::string_view(text).substr(body, next == std::string::npos ? next : next - body);
    if (text[body] == '[') {  // a JSON array of {"name", "arguments"}; the complete ones
      for (const json& c : complete_array_items(text.substr(0, body + block.size()), body)) {
        if (c.is_object() && c.contains("name") && c["name"].is_string()) {
          out.calls.push_back(make_call(c["name"].get<std::string>(),
                                        c.contains("arguments") ? c["arguments"] : json::object(),
                                        id_seed, out.calls.size()));
        }
      }
    } else if (const size_t args = block.find(kArgs); args != std::string_view::npos) {
      const json j = json::parse(block.substr(args + kArgs.size()), nullptr, false);
      if (!j.is_discarded() && j.is_object()) {
        out.calls.push_back(
            make_call(trimmed(block.substr(0, args)), j, id_seed, out.calls.size()));
      }
    }
    at = next;
  }
  return out;
}

std::string mistral_call_id(uint64_t seed, size_t index) {
  static constexpr std::string_view kAlnum =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + index + 1);
  std::string id;
  for (int i = 0; i < 9; ++i) id += kAlnum[rng() % kAlnum.size()];
  return id;
}

}  // namespace llmserve
