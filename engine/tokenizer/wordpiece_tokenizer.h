// The Tokenizer for WordPiece (BERT), as HF tokenizers' BertWordPiece pipeline: special tokens
// (control and user-defined ones, e.g. "[MASK]") split out of the raw text first; the rest goes
// through bert_words (engine/tokenizer/bert_normalizer.h), then each word greedily into the
// longest vocab pieces from its start (continuations carry spec.wordpiece.prefix); a word with
// no such split, or longer than max_chars_per_word characters, is one [UNK]. add_special puts
// [CLS] before and [SEP] after (spec.add_bos / add_eos).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/special_token_splitter.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

class WordPieceTokenizer final : public Tokenizer {
 public:
  // Errors: no [UNK] id, an empty vocab.
  static Result<std::unique_ptr<Tokenizer>> build(TokenizerSpec spec);

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  // Pieces joined by spaces, continuations glued to their word, HF's clean-up of the spaces
  // before punctuation and contractions.
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override;
  std::string token_bytes(int32_t id) const override;
  const std::string& token_text(int32_t id) const override;
  bool is_special(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(spec_.tokens.size()); }
  const TokenizerSpec& spec() const override { return spec_; }

 private:
  explicit WordPieceTokenizer(TokenizerSpec spec) : spec_(std::move(spec)) {}
  void encode_word(const std::string& word, std::vector<int32_t>& out) const;

  TokenizerSpec spec_;  // never moved after build: the tables below hold views into it
  std::unordered_map<std::string_view, int32_t> ids_;
  SpecialTokenSplitter specials_;
  std::string empty_;
};

}  // namespace llmserve
