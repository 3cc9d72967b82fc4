// Lines a client varies ahead of the conversation, taken out of the system prompt so that
// conversations share their prompt prefix (system prompt and tools) in the prefix cache.
//
// Claude Code opens its system prompt with a block of one line,
//   x-anthropic-billing-header: cc_version=2.1.337.ef8; cc_entrypoint=sdk-cli;
// whose cc_version suffix follows the conversation's first user message (two runs with the
// prompts "say hi" and "say hi again" sent ".ef8" and ".4d6"; the turns of one conversation
// repeat it). Rendered first, it makes every conversation's prompt differ from its first
// tokens, so none reuses another's cached system prompt and tools (measured:
// docs/ANTHROPIC_API.md). It carries nothing for the model: a line that starts with one of the
// configured prefixes (server.anthropic_strip_system_lines, default this one) is dropped, with its
// line break, from every system text block and system string before the template renders.
// Deterministic: the same request always renders the same prompt.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

// `text` without its lines that start with one of `prefixes` (an empty prefix matches nothing).
std::string strip_volatile_lines(std::string_view text, const std::vector<std::string>& prefixes);

}  // namespace llmserve
