// The Tokenizer implementation for both BPE kinds: special tokens split out first, then
// byte-level (pre-tokenizer regex + GPT-2 byte mapping) or SentencePiece-style ("▁" escaping,
// byte fallback) text goes through one BpeModel.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/special_token_splitter.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

class BpeTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> build(TokenizerSpec spec);

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override;
  std::string token_bytes(int32_t id) const override;
  const std::string& token_text(int32_t id) const override;
  bool is_special(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(spec_.tokens.size()); }
  const TokenizerSpec& spec() const override { return spec_; }

 private:
  explicit BpeTokenizer(TokenizerSpec spec) : spec_(std::move(spec)) {}
  Status init();
  TokenType type_of(int32_t id) const;
  void encode_text(std::string_view text, bool at_start, std::vector<int32_t>& out) const;

  TokenizerSpec spec_;  // never moved after init(): the tables below hold views into it
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PreTokenizer> pre_;  // byte-level only
  SpecialTokenSplitter specials_;
  std::vector<std::string> bytes_;  // token_bytes per id
};

}  // namespace llmserve
