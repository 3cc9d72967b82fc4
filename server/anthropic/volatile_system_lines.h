// Lines a client changes on every request ahead of the conversation, taken out of the system
// prompt so that an agent's turns share their prompt prefix in the prefix cache.
//
// Claude Code opens its system prompt with a block of one line,
//   x-anthropic-billing-header: cc_version=2.1.337.ef8; cc_entrypoint=sdk-cli;
// whose cc_version suffix changes from request to request (two runs with different prompts sent
// ".ef8" and ".4d6"). Rendered first, it makes every turn's prompt differ from its first tokens,
// so every turn would be a full prefill. It carries nothing for the model: a line that starts
// with one of the configured prefixes (server.anthropic_strip_system_lines, default this one)
// is dropped, with its line break, from every system text block and system string, before the
// template renders. Deterministic: the same request always renders the same prompt.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

// `text` without its lines that start with one of `prefixes` (an empty prefix matches nothing).
std::string strip_volatile_lines(std::string_view text, const std::vector<std::string>& prefixes);

}  // namespace llmserve
