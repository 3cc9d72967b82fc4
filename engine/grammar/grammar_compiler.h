// Compiles GrammarSpecs against the served tokenizer on a small pool of its own threads (never
// the engine thread), caching results by GrammarSpec::key() (LRU, failures included), so a
// schema many requests share compiles once.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>

#include "engine/core/status.h"
#include "engine/grammar/compiled_grammar.h"
#include "engine/grammar/grammar_spec.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

using CompiledGrammarPtr = std::shared_ptr<const CompiledGrammar>;
using GrammarFuture = std::shared_future<Result<CompiledGrammarPtr>>;

struct GrammarCompilerOptions {
  int32_t threads = 2;          // compile threads (>= 1)
  int32_t cache_entries = 256;  // compiled grammars kept (>= 1)
};

struct GrammarCompilerStats {
  int64_t compiled = 0;        // compiles that ran (successful or not)
  int64_t cache_hits = 0;      // requests served from the cache (or a compile in flight)
  int64_t failed = 0;          // compiles that gave an error
  int64_t cached = 0;          // entries in the cache now
  double compile_seconds = 0;  // summed over the compiles that ran
};

class GrammarCompiler {
 public:
  // vocab_size: the model's logits width (>= the tokenizer's vocab; ids past it are never
  // allowed). The tokenizer must outlive the compiler.
  GrammarCompiler(const Tokenizer& tokenizer, int32_t vocab_size, GrammarCompilerOptions options);
  ~GrammarCompiler();  // waits for compiles in flight
  GrammarCompiler(const GrammarCompiler&) = delete;
  GrammarCompiler& operator=(const GrammarCompiler&) = delete;

  // Ready at once when cached, else when a pool thread has compiled it. Errors:
  // INVALID_ARGUMENT naming what is wrong (bad schema, regex or grammar, or a schema feature
  // xgrammar does not support), without the field: the cache shares it between fields.
  GrammarFuture compile(const GrammarSpec& spec);
  // compile() and wait until `deadline`: errors as above prefixed "<spec.field>: ", or
  // DEADLINE_EXCEEDED.
  Result<CompiledGrammarPtr> compile_and_wait(const GrammarSpec& spec,
                                              std::chrono::steady_clock::time_point deadline);

  GrammarCompilerStats stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The EBNF whose only sentences are `choices` (exact strings), as xgrammar parses it.
std::string choice_grammar_ebnf(const std::vector<std::string>& choices);

}  // namespace llmserve
