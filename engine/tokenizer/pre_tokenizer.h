// Splits text into pieces before BPE with a sequence of regexes (PCRE2, UTF + UCP, JIT). Each
// regex splits every piece of the previous stage; matches and the gaps between them both become
// pieces ("isolated" splitting, like HF `Split` and llama.cpp's regex sequences).
#pragma once

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

 private:
  PreTokenizer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmserve
