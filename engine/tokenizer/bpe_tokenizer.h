// The Tokenizer implementation for both BPE kinds: special tokens split out first, then
// byte-level (pre-tokenizer regex + GPT-2 byte mapping) or SentencePiece-style ("▁" escaping,
// byte fallback) text goes through one BpeModel.
#pragma once

#include <array>
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
  LimitedEncoding encode_limited(std::string_view text, size_t max_tokens, bool add_special,
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
  // Append the ids of text to out; false (out then holds a prefix of them) as soon as out would
  // pass `limit` ids.
  bool encode_text(std::string_view text, bool at_start, size_t limit,
                   std::vector<int32_t>& out) const;
  bool encode_into(std::string_view text, bool add_special, bool parse_special, size_t limit,
                   std::vector<int32_t>& out) const;
  // True when `text` (a byte-level piece, raw bytes; or a SentencePiece word) surely gives more
  // than limit - have ids, judged by min_ids_bound_ without merging it.
  bool surely_over(std::string_view text, size_t have, size_t limit) const;

  TokenizerSpec spec_;  // never moved after init(): the tables below hold views into it
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PreTokenizer> pre_;  // byte-level only
  SpecialTokenSplitter specials_;
  std::vector<std::string> bytes_;  // token_bytes per id
  // A lower bound on a piece's ids: each id covers at most max_token_bytes_ bytes of it (raw
  // bytes for byte-level, "▁"-escaped bytes for SentencePiece), and together they cover every
  // byte that does not vanish. Byte-level drops bytes whose character is not in the vocab
  // (byte_known_ false); SentencePiece only gets a bound when every byte has a <0xNN> fallback
  // (0 = no bound).
  size_t max_token_bytes_ = 0;
  std::array<bool, 256> byte_known_{};
};

}  // namespace llmserve
