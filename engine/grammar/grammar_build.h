// xgrammar's compiler over the served vocabulary (built once, on first use) and the two halves
// of one compile: the work a compile child process does (compile, check, serialize) and the
// parent's reading of its reply. Used by GrammarCompiler only.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "engine/core/status.h"
#include "engine/grammar/compiled_grammar.h"
#include "engine/grammar/grammar_spec.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

class GrammarBuild {
 public:
  // The tokenizer must outlive this object.
  GrammarBuild(const Tokenizer& tokenizer, int32_t vocab_size);
  ~GrammarBuild();

  // Builds the vocabulary tables once (seconds for a large vocabulary); call before forking.
  void prepare();
  // In the compile child: the reply for `spec`: the compiled grammar, serialized, or the error
  // (xgrammar's, a grammar over max_bytes, or one that allows no token at its start).
  std::string compile_reply(const GrammarSpec& spec, int64_t max_bytes);
  // In the parent: the grammar or the INVALID_ARGUMENT error a reply holds.
  Result<std::shared_ptr<const CompiledGrammar>> read_reply(const GrammarSpec& spec,
                                                            const std::string& reply);

 private:
  struct Tables;
  const Tokenizer& tokenizer_;
  int32_t vocab_size_;
  std::once_flag once_;
  std::unique_ptr<Tables> tables_;
};

// "cannot compile the <kind>: <why>" (INVALID_ARGUMENT): every compile error's form.
Status grammar_error(const GrammarSpec& spec, const std::string& why);

}  // namespace llmserve
