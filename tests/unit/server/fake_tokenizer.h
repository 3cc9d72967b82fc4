// A byte-level tokenizer for server tests: ids 0..255 are bytes, 256 "<|im_start|>",
// 257 "<|im_end|>", 258 "<|endoftext|>" (EOS); vocab 300.
#pragma once

#include "engine/tokenizer/tokenizer.h"

namespace llmserve::testing {

class FakeTokenizer : public Tokenizer {
 public:
  static constexpr int32_t kImStart = 256, kImEnd = 257, kEos = 258, kVocab = 300;
  FakeTokenizer();
  std::vector<int32_t> encode(std::string_view text, bool add_special = true,
                              bool parse_special = true) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const override;
  std::string token_bytes(int32_t id) const override;
  const std::string& token_text(int32_t id) const override;
  bool is_special(int32_t id) const override { return id >= 256; }
  int32_t vocab_size() const override { return kVocab; }
  const TokenizerSpec& spec() const override { return spec_; }

 private:
  TokenizerSpec spec_;
  std::vector<std::string> texts_;
};

}  // namespace llmserve::testing
