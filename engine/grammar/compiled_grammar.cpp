#include "engine/grammar/compiled_grammar.h"

#include "engine/grammar/xgrammar_impl.h"

namespace llmserve {

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Impl> impl, GrammarSpec spec)
    : impl_(std::move(impl)), spec_(std::move(spec)) {}

TokenMatcher CompiledGrammar::make_matcher() const {
  return TokenMatcher(std::make_unique<TokenMatcher::Impl>(TokenMatcher::Impl{
      xgrammar::GrammarMatcher(impl_->compiled), impl_->vocab_size, impl_->denied}));
}

int32_t CompiledGrammar::vocab_size() const {
  return impl_->vocab_size;
}

size_t CompiledGrammar::memory_bytes() const {
  return impl_->compiled.MemorySizeBytes();
}

}  // namespace llmserve
