// Splits text into pieces before BPE with a sequence of regexes (PCRE2, UTF + UCP, JIT). Each
// regex splits every piece of the previous stage; matches and the gaps between them both become
// pieces ("isolated" splitting, like HF `Split` and llama.cpp's regex sequences).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace llmserve {

class PreTokenizer {
 public:
  // The regex sequence of a known pre-tokenizer name (GGUF tokenizer.ggml.pre): "gpt2" (also
  // "default" and ""), "smollm", "llama-bpe" (Llama-3), "qwen2". kUnimplemented for others.
  static Result<std::vector<std::string>> patterns_for(std::string_view name);
  static Result<std::unique_ptr<PreTokenizer>> create(const std::vector<std::string>& patterns);

  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Appends the pieces of text (views into text, in order, covering all of it) to out.
  // Precondition: text is valid UTF-8.
  void split(std::string_view text, std::vector<std::string_view>& out) const;
  // The same pieces, in order, handed to `piece` one at a time as they are found (nothing is
  // collected: memory stays O(1) in the number of pieces). `piece` returns false to stop; then
  // split returns false. Precondition: text is valid UTF-8.
  using PieceFn = std::function<bool(std::string_view)>;
  bool split(std::string_view text, const PieceFn& piece) const;

 private:
  PreTokenizer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmserve
