#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve::testing {

FakeTokenizer::FakeTokenizer() {
  for (int i = 0; i < 256; ++i) texts_.push_back(std::string(1, static_cast<char>(i)));
  texts_.push_back("<|im_start|>");
  texts_.push_back("<|im_end|>");
  texts_.push_back("<|endoftext|>");
  while (static_cast<int32_t>(texts_.size()) < kVocab) {
    texts_.push_back("<unused_" + std::to_string(texts_.size()) + ">");
  }
  spec_.tokens = texts_;
  spec_.eos_id = kEos;
  spec_.stop_ids = {kEos, kImEnd};
}

std::vector<int32_t> FakeTokenizer::encode(std::string_view text, bool /*add_special*/,
                                           bool parse_special) const {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    bool matched = false;
    if (parse_special) {
      for (int32_t s = 256; s <= 258; ++s) {
        const std::string& t = texts_[static_cast<size_t>(s)];
        if (text.substr(i, t.size()) == t) {
          ids.push_back(s);
          i += t.size();
          matched = true;
          break;
        }
      }
    }
    if (!matched) ids.push_back(static_cast<unsigned char>(text[i++]));
  }
  return ids;
}

std::string FakeTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    out += token_bytes(id);
  }
  return out;
}

std::string FakeTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= kVocab) return "";
  return texts_[static_cast<size_t>(id)];
}

const std::string& FakeTokenizer::token_text(int32_t id) const {
  static const std::string kEmpty;
  if (id < 0 || id >= kVocab) return kEmpty;
  return texts_[static_cast<size_t>(id)];
}

}  // namespace llmserve::testing
