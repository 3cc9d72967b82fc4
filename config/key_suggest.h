// "did you mean" hints for misspelt section and key names.
#pragma once

#include <string>
#include <string_view>

namespace llmserve {

// "; did you mean engine.block_size?" for the closest key of `section` (or "" when none is
// close), followed by the list of keys of that section.
std::string unknown_key_hint(std::string_view section, std::string_view name);

// "; sections are server, model, engine, logging" (with a "did you mean" when one is close).
std::string unknown_section_hint(std::string_view name);

}  // namespace llmserve
