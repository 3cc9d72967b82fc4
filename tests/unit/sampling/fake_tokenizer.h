// A small byte-level Tokenizer for tests: ids 0-1 are special, 2..257 are single bytes, then a
// few multi-byte pieces (some split UTF-8 characters). With `sentencepiece` set, decode strips
// one leading space of the whole result (HF's Strip decoder for Llama-style tokenizers).
#pragma once

#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace llmserve::testing {

class FakeTokenizer : public Tokenizer {
 public:
  static constexpr int32_t kEos = 0;
  static constexpr int32_t kImEnd = 1;
  static constexpr int32_t kFirstByte = 2;

  explicit FakeTokenizer(bool sentencepiece = false) : sentencepiece_(sentencepiece) {
    spec_.tokens = {"<eos>", "<|im_end|>"};
    for (int b = 0; b < 256; ++b) spec_.tokens.push_back(std::string(1, static_cast<char>(b)));
    for (const char* piece :
         {"hello", " world",   " wor",     "ld",    "\xC3\xA9", "\xE2\x82\xAC", "\xE2\x82",
          "\xAC",  "\xF0\x9F", "\x98\x80", "STOP",  "ST",       "OP",           " the",
          " ",     "  ",       "\xC3",     "\xA9!", "</s",      "top>"}) {
      spec_.tokens.push_back(piece);
    }
    spec_.eos_id = kEos;
    spec_.stop_ids = {kEos, kImEnd};
    spec_.kind = sentencepiece ? TokenizerKind::kSentencePieceBpe : TokenizerKind::kByteLevelBpe;
  }

  int32_t id_of(const std::string& piece) const {
    for (size_t i = kFirstByte + 256; i < spec_.tokens.size(); ++i) {
      if (spec_.tokens[i] == piece) return static_cast<int32_t>(i);
    }
    if (piece.size() == 1) return kFirstByte + static_cast<unsigned char>(piece[0]);
    return -1;
  }

  // Ids spelling `text` one byte at a time.
  std::vector<int32_t> bytes_of(const std::string& text) const {
    std::vector<int32_t> ids;
    for (unsigned char c : text) ids.push_back(kFirstByte + c);
    return ids;
  }

  std::vector<int32_t> encode(std::string_view text, bool, bool) const override {
    return bytes_of(std::string(text));
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const override {
    std::string out;
    for (int32_t id : ids) {
      if (skip_special && is_special(id)) continue;
      out += token_bytes(id);
    }
    if (sentencepiece_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
  }
  std::string token_bytes(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return {};
    return spec_.tokens[id];
  }
  const std::string& token_text(int32_t id) const override { return spec_.tokens.at(id); }
  bool is_special(int32_t id) const override { return id == kEos || id == kImEnd; }
  int32_t vocab_size() const override { return static_cast<int32_t>(spec_.tokens.size()); }
  const TokenizerSpec& spec() const override { return spec_; }

 private:
  bool sentencepiece_;
  TokenizerSpec spec_;
};

}  // namespace llmserve::testing
