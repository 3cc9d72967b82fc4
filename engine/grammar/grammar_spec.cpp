#include "engine/grammar/grammar_spec.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

namespace llmserve {

namespace {

// Each piece is length-prefixed so ("ab", "c") and ("a", "bc") hash apart.
void update_sized(XXH3_state_t* state, const std::string& s) {
  const uint64_t len = s.size();
  XXH3_64bits_update(state, &len, sizeof(len));
  XXH3_64bits_update(state, s.data(), s.size());
}

}  // namespace

const char* grammar_kind_name(GrammarKind kind) {
  switch (kind) {
    case GrammarKind::kJsonObject:
      return "json_object";
    case GrammarKind::kJsonSchema:
      return "json_schema";
    case GrammarKind::kRegex:
      return "regex";
    case GrammarKind::kChoice:
      return "choice";
    case GrammarKind::kEbnf:
      return "ebnf";
    case GrammarKind::kTaggedJson:
      return "tagged_json";
    case GrammarKind::kStructuralTag:
      return "structural_tag";
  }
  return "unknown";
}

uint64_t GrammarSpec::key() const {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  const uint32_t kind_code = static_cast<uint32_t>(kind);
  XXH3_64bits_update(&state, &kind_code, sizeof(kind_code));
  update_sized(&state, text);
  const uint64_t count = choices.size();
  XXH3_64bits_update(&state, &count, sizeof(count));
  for (const auto& c : choices) update_sized(&state, c);
  XXH3_64bits_update(&state, &max_repeats, sizeof(max_repeats));
  return XXH3_64bits_digest(&state);
}

}  // namespace llmserve
