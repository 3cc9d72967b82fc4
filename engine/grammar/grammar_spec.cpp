#include "engine/grammar/grammar_spec.h"

#include <xxhash.h>

namespace llmserve {

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
      return "grammar";
  }
  return "grammar";
}

uint64_t GrammarSpec::key() const {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  const auto k = static_cast<uint32_t>(kind);
  XXH3_64bits_update(st, &k, sizeof k);
  const uint64_t len = text.size();
  XXH3_64bits_update(st, &len, sizeof len);
  XXH3_64bits_update(st, text.data(), text.size());
  for (const std::string& c : choices) {
    const uint64_t n = c.size();
    XXH3_64bits_update(st, &n, sizeof n);
    XXH3_64bits_update(st, c.data(), c.size());
  }
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

}  // namespace llmserve
