// The xgrammar objects behind CompiledGrammar and TokenMatcher (grammar component only).
#pragma once

#include <xgrammar/xgrammar.h>

#include <memory>
#include <vector>

#include "engine/grammar/compiled_grammar.h"
#include "engine/grammar/token_matcher.h"

namespace llmserve {

// Tokens a grammar never allows on top of what xgrammar says (bit set = denied): for JSON
// kinds, every token holding a C0 control byte or a piece of a UTF-8 character. Compact JSON
// has no raw control bytes, and xgrammar 0.2.9 lets both raw control bytes and broken UTF-8
// into strings with minLength / maxLength (our random-logits tests found it). A character the
// vocabulary spells only in pieces is still reachable as a \u escape in unbounded strings.
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
