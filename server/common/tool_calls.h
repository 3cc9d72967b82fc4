// Tool calling on /v1/chat/completions in two formats.
// - Generic (llama.cpp's way, for templates without a tool format, SmolLM2's among them): the
//   tools are described in a system message and a JSON grammar makes the reply either
//   {"tool_calls": [{"name", "arguments"}...]} or, under tool_choice "auto",
//   {"response": "..."}.
// - Hermes (templates that render `tools` and write <tool_call> blocks: Hermes, Qwen 2/2.5):
//   the tools go to the template; the reply's <tool_call>{"name", "arguments"}</tool_call>
//   blocks are the calls. Under "auto" the model writes freely; under `required` and a named
//   function a grammar forces one block (1..4 with parallel_tool_calls).
// `required` and a named function are enforced by grammar in both, so a call always parses and
// its arguments follow the function's parameter schema.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/grammar/grammar_spec.h"

namespace llmserve {

struct ToolFunction {
  std::string name;  // [a-zA-Z0-9_-]{1,64}
  std::string description;
  nlohmann::ordered_json parameters;  // a JSON Schema ({"type": "object"} when not given)
};

enum class ToolChoice { kNone, kAuto, kRequired, kNamed };
// kMistral / kMistralArgs: [TOOL_CALLS] replies (server/common/mistral_tool_calls.h).
enum class ToolFormat { kGeneric, kHermes, kMistral, kMistralArgs };

// Mistral when the template reads `tools` and writes [TOOL_CALLS] (kMistralArgs with [ARGS]),
// Hermes when it writes <tool_call> blocks, else generic.
ToolFormat detect_tool_format(std::string_view template_source);

struct ToolRequest {
  std::vector<ToolFunction> tools;  // empty: no tools asked
  ToolChoice choice = ToolChoice::kAuto;
  std::string named;  // kNamed: the function
  bool parallel_tool_calls = true;
  // Under "auto", the JSON Schema a text answer follows (from response_format, as the Agents
  // SDK and pydantic-ai send it beside tools); none: a free string.
  std::optional<nlohmann::ordered_json> reply_schema;

  bool active() const { return !tools.empty() && choice != ToolChoice::kNone; }
};

struct ToolCall {
  std::string id;  // "call_..." (unique per call)
  std::string name;
  std::string arguments;  // JSON text of the arguments object
};

// The reply read back: tool calls, or text content (the "response" branch).
struct ToolReply {
  std::vector<ToolCall> calls;
  std::string content;
  bool is_call() const { return !calls.empty(); }
};

// Reads `tools`, `tool_choice` and `parallel_tool_calls` of a chat body (ordered: a schema's
// properties keep the caller's order, which the output follows). Errors name the field
// (tools[i].function.name, tool_choice, ...). At most `max_tools` tools.
Result<ToolRequest> parse_tool_request(const nlohmann::ordered_json& body, size_t max_tools = 128);

// Sets request->reply_schema from a request's own response_format grammar: a text answer under
// "auto" follows `text_format` (json_schema, or json_object as any object); under "required" or
// a named function no text answer can come and it is moot. Another format than the generic one
// under "auto" (free text, no grammar) and other grammar kinds are an error naming `tools`.
Status set_reply_format(const GrammarSpec& text_format, ToolFormat format, ToolRequest* request);

// How many calls one reply may make: 1 for a named function (OpenAI: "forces the model to call
// that function", once) or with parallel_tool_calls false; else a bound, so that a model that
// repeats a call stops (the generic format's grammar is an array with maxItems; Hermes' repeats
// its tagged block, unrolled, so its bound is smaller).
inline constexpr int32_t kMaxParallelToolCalls = 8;
inline constexpr int32_t kMaxParallelToolCallsHermes = 4;
int32_t max_tool_calls(const ToolRequest& request, ToolFormat format);

// The grammar the reply must follow (request.active() only); none for Hermes under "auto". In
// the generic format a text answer is {"response": <a string, or a value of reply_schema>}.
std::optional<GrammarSpec> tool_call_grammar(const ToolRequest& request,
                                             ToolFormat format = ToolFormat::kGeneric);

// The template's `tools` variable: the offered functions in OpenAI's shape (a named choice
// offers only that one).
nlohmann::ordered_json tools_for_template(const ToolRequest& request);

// The system text that describes the tools and the reply format to the model.
std::string tool_system_prompt(const ToolRequest& request);

// Adds tool_system_prompt to `messages` (to the first system message, or as a new first one).
void add_tool_prompt(const ToolRequest& request, nlohmann::json& messages);

// Reads a reply made under tool_call_grammar ({"response": <JSON value>} gives the value's JSON
// text as content). A reply cut short (max_tokens, a stop string)
// gives the calls complete before the cut, and the "response" text up to it; the call format
// itself ({"tool_calls": ...}, an unclosed <tool_call> block) never comes back as content.
// Other text is content. Ids are "call_<hex>" made from `id_seed` and the call's index.
ToolReply parse_tool_reply(const std::string& text, uint64_t id_seed,
                           ToolFormat format = ToolFormat::kGeneric);

// An assistant message's `tool_calls` as the generic format writes them, for the template.
std::string tool_calls_as_reply_text(const nlohmann::json& tool_calls);

}  // namespace llmserve
