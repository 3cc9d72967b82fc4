// Mistral's tool-call format (templates that render `tools` in [AVAILABLE_TOOLS] and write
// [TOOL_CALLS]: Mistral 7B v0.3, Mixtral 8x22B, Nemo, Small, Devstral):
//   [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]      (v3 tokenizer templates)
//   [TOOL_CALLS]f[ARGS]{...}[TOOL_CALLS]g[ARGS]{...}         (v11 templates, with [ARGS])
// Call ids are 9 letters and digits: the templates refuse other ids when a conversation sends the
// calls back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/grammar/grammar_spec.h"
#include "server/common/tool_calls.h"

namespace llmserve {

// Whether a template writes Mistral's [TOOL_CALLS] and reads `tools`.
bool is_mistral_tool_template(std::string_view template_source);
// Whether it is the v11 form (name, then [ARGS], then the arguments).
bool is_mistral_args_template(std::string_view template_source);

// The grammar for `required` or a named function: one [TOOL_CALLS] reply with 1..max calls
// (max_tool_calls); none under "auto" (the model writes freely).
std::optional<GrammarSpec> mistral_tool_grammar(const ToolRequest& request, bool args_form);

// Reads either form. Text before [TOOL_CALLS] is content; a call cut short is dropped.
ToolReply parse_mistral_reply(const std::string& text, uint64_t id_seed);

// "[a-zA-Z0-9]{9}", from the seed and the call's index.
std::string mistral_call_id(uint64_t seed, size_t index);

}  // namespace llmserve
