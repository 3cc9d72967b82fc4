// Incremental detokenizer for one sample (vLLM / TGI prefix and read offsets). Each new token
// re-decodes a short window ids[prefix_offset..] and emits what the window gained past
// ids[prefix_offset..read_offset), so SentencePiece leading-space stripping and byte-level
// merges come out as the full decode would. A delta that ends inside a UTF-8 character is held
// until the character completes; ill-formed bytes become U+FFFD. Without context, the
// concatenation of all deltas plus flush() equals utf8_sanitize(tokenizer.decode(ids, skip)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

class Detokenizer {
 public:
  // context: ids decoded before the output (e.g. the prompt's last few tokens) so the first
  // output token is decoded as mid-sequence (keeps its leading space, as vLLM does); its text is
  // never emitted. Empty: the output decodes as a sequence of its own. `tokenizer` must outlive
  // this object.
  Detokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
              std::span<const int32_t> context = {});

  // Adds one token; returns the newly completed text (valid UTF-8, possibly empty).
  std::string append(int32_t token_id);
  // End of the sample: the text still held, with an unfinished trailing character as U+FFFD.
  std::string flush();

  size_t num_output_tokens() const { return ids_.size() - context_size_; }

 private:
  std::string decode(size_t begin, size_t end) const;

  const Tokenizer& tokenizer_;
  const bool skip_special_;
  const size_t context_size_;
  std::vector<int32_t> ids_;  // context + output
  size_t prefix_offset_ = 0;
  size_t read_offset_ = 0;
};

}  // namespace llmserve
