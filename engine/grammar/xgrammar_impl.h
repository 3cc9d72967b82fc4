// The xgrammar objects behind CompiledGrammar and TokenMatcher (grammar component only).
#pragma once

#include <xgrammar/xgrammar.h>

#include <memory>
#include <vector>

#include "engine/grammar/compiled_grammar.h"
#include "engine/grammar/token_matcher.h"

namespace llmserve {

// Tokens a grammar never allows on top of what xgrammar says (bit set = denied): for JSON
// kinds, every token holding a C0 control byte. Compact JSON has none outside escapes, and
// xgrammar 0.2.9 lets raw control bytes into strings with minLength / maxLength.
using DeniedTokens = std::shared_ptr<const std::vector<uint32_t>>;

struct CompiledGrammar::Impl {
  xgrammar::CompiledGrammar compiled;
  int32_t vocab_size = 0;
  DeniedTokens denied;  // may be null
};

struct TokenMatcher::Impl {
  xgrammar::GrammarMatcher matcher;
  int32_t vocab_size = 0;
  DeniedTokens denied;
};

}  // namespace llmserve
