// Compiles GrammarSpecs against the served tokenizer on a small pool of its own threads (never
// the engine thread), each compile in a child process (compile_process.h) so it can be stopped,
// caching results by GrammarSpec::key() (LRU, bounded by entries and by bytes, failures
// included), so a schema many requests share compiles once. What a compile may cost is bounded
// before it starts (schema depth and size, json_schema_check.h) and while it runs (a time budget
// and an address-space cap on the child); a grammar larger than max_grammar_bytes or one that
// allows no output at all is refused. A compile that nobody waits for any more is dropped from
// the queue, or killed when running.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>

#include "engine/core/status.h"
#include "engine/grammar/compiled_grammar.h"
#include "engine/grammar/grammar_spec.h"
#include "engine/grammar/json_schema_check.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

using CompiledGrammarPtr = std::shared_ptr<const CompiledGrammar>;
using GrammarFuture = std::shared_future<Result<CompiledGrammarPtr>>;

struct GrammarCompilerOptions {
  int32_t threads = 2;                              // compile threads (>= 1)
  int32_t cache_entries = 256;                      // compiled grammars kept (>= 1)
  int64_t cache_bytes = int64_t{512} << 20;         // their summed memory_bytes()
  int64_t max_grammar_bytes = int64_t{64} << 20;    // one grammar; larger ones are refused
  double compile_timeout_seconds = 20;              // one compile's budget (wall clock)
  int64_t compile_memory_bytes = int64_t{2} << 30;  // a compile's address space, past ours
  int32_t max_queued = 64;  // compiles waiting for a thread; beyond: RESOURCE_EXHAUSTED
  SchemaLimits schema{};
};

struct GrammarCompilerStats {
  int64_t compiled = 0;        // compiles that ran (successful or not)
  int64_t cache_hits = 0;      // requests served from the cache (or a compile in flight)
  int64_t failed = 0;          // compiles that gave an error
  int64_t cached = 0;          // entries in the cache now
  int64_t cached_bytes = 0;    // their memory_bytes()
  int64_t abandoned = 0;       // compiles dropped or killed because nobody waited for them
  int64_t timed_out = 0;       // compiles killed at their time budget
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
  // compile() and wait until `deadline`, or until cancelled() (polled every few milliseconds)
  // turns true: errors as above prefixed "<spec.field>: ", DEADLINE_EXCEEDED, CANCELLED,
  // RESOURCE_EXHAUSTED (max_queued compiles wait already) or UNAVAILABLE (shut down). When the
  // last caller waiting for a compile leaves before it is done, the compile is dropped.
  Result<CompiledGrammarPtr> compile_and_wait(const GrammarSpec& spec,
                                              std::chrono::steady_clock::time_point deadline,
                                              const std::function<bool()>& cancelled = {});

  // Fails every queued compile and every waiter with UNAVAILABLE and kills running compiles;
  // later calls fail at once. Any thread; idempotent.
  void shutdown();

  GrammarCompilerStats stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The EBNF whose only sentences are `choices` (exact strings), as xgrammar parses it.
std::string choice_grammar_ebnf(const std::vector<std::string>& choices);

}  // namespace llmserve
