// A grammar compiled against one tokenizer's vocabulary (GrammarCompiler makes them). Shared by
// every request that asks for the same GrammarSpec; immutable, so any thread may read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/grammar/grammar_spec.h"
#include "engine/grammar/token_matcher.h"

namespace llmserve {

class CompiledGrammar {
 public:
  struct Impl;
  explicit CompiledGrammar(std::shared_ptr<const Impl> impl, GrammarSpec spec);

  // A matcher at the grammar's start.
  TokenMatcher make_matcher() const;
  const GrammarSpec& spec() const { return spec_; }
  int32_t vocab_size() const;  // bits of the matcher's mask
  size_t memory_bytes() const;

 private:
  std::shared_ptr<const Impl> impl_;
  GrammarSpec spec_;
};

}  // namespace llmserve
