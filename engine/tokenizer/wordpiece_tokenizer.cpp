#include "engine/tokenizer/wordpiece_tokenizer.h"

#include "engine/tokenizer/bert_normalizer.h"
#include "engine/tokenizer/utf8.h"

namespace llmserve {

Result<std::unique_ptr<Tokenizer>> WordPieceTokenizer::build(TokenizerSpec spec) {
  if (spec.tokens.empty()) return invalid_argument("wordpiece: the vocab is empty");
  const auto n = static_cast<int32_t>(spec.tokens.size());
  if (spec.unk_id < 0 || spec.unk_id >= n) {
    return invalid_argument("wordpiece: the vocab has no [UNK] token");
  }
  if ((spec.add_bos && (spec.bos_id < 0 || spec.bos_id >= n)) ||
      (spec.add_eos && (spec.eos_id < 0 || spec.eos_id >= n))) {
    return invalid_argument("wordpiece: [CLS] / [SEP] are added but not in the vocab");
  }
  std::unique_ptr<WordPieceTokenizer> t(new WordPieceTokenizer(std::move(spec)));
  std::vector<std::pair<std::string_view, int32_t>> specials;
  for (int32_t id = 0; id < n; ++id) {
    const std::string& s = t->spec_.tokens[static_cast<size_t>(id)];
    if (s.empty()) continue;
    t->ids_.emplace(s, id);  // the first id of a duplicated string wins
    if (t->is_special(id) ||
        (!t->spec_.token_types.empty() &&
         t->spec_.token_types[static_cast<size_t>(id)] == TokenType::kUserDefined)) {
      specials.emplace_back(s, id);
    }
  }
  t->specials_ = SpecialTokenSplitter(std::move(specials));
  return std::unique_ptr<Tokenizer>(std::move(t));
}

void WordPieceTokenizer::encode_word(const std::string& word, std::vector<int32_t>& out) const {
  size_t chars = 0;
  for (size_t pos = 0; pos < word.size(); ++chars) utf8_next(word, pos);
  if (static_cast<int64_t>(chars) > spec_.wordpiece.max_chars_per_word) {
    out.push_back(spec_.unk_id);
    return;
  }
  const size_t mark = out.size();
  std::string piece;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    int32_t found = -1;
    while (end > start) {
      piece.assign(start > 0 ? spec_.wordpiece.prefix : std::string());
      piece.append(word, start, end - start);
      if (auto it = ids_.find(piece); it != ids_.end()) {
        found = it->second;
        break;
      }
      do {  // back by one character
        --end;
      } while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (found < 0) {  // no piece starts here: the whole word is unknown
      out.resize(mark);
      out.push_back(spec_.unk_id);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view text, bool add_special,
                                                bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special && spec_.add_bos) out.push_back(spec_.bos_id);
  std::vector<SpecialTokenSplitter::Fragment> fragments;
  if (parse_special && !specials_.empty()) {
    specials_.split(text, fragments);
  } else {
    fragments.push_back({text, -1});
  }
  for (const auto& f : fragments) {
    if (f.id >= 0) {
      out.push_back(f.id);
      continue;
    }
    for (const std::string& word : bert_words(f.text, spec_.wordpiece)) encode_word(word, out);
  }
  if (add_special && spec_.add_eos) out.push_back(spec_.eos_id);
  return out;
}

std::string WordPieceTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  const std::string& prefix = spec_.wordpiece.prefix;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    if (skip_special && is_special(id)) continue;
    const std::string& tok = spec_.tokens[static_cast<size_t>(id)];
    if (!prefix.empty() && tok.starts_with(prefix) && !out.empty()) {
      out.append(tok, prefix.size());
    } else {
      if (!out.empty()) out.push_back(' ');
      out.append(tok);
    }
  }
  // HF's WordPiece decoder clean-up.
  static constexpr std::pair<std::string_view, std::string_view> kCleanup[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kCleanup) {
    for (size_t p = out.find(from); p != std::string::npos; p = out.find(from, p + to.size())) {
      out.replace(p, from.size(), to);
    }
  }
  return out;
}

std::string WordPieceTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  const std::string& tok = spec_.tokens[static_cast<size_t>(id)];
  const std::string& prefix = spec_.wordpiece.prefix;
  if (is_special(id)) return tok;
  if (!prefix.empty() && tok.starts_with(prefix)) return tok.substr(prefix.size());
  return " " + tok;
}

const std::string& WordPieceTokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return empty_;
  return spec_.tokens[static_cast<size_t>(id)];
}

bool WordPieceTokenizer::is_special(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return false;
  if (spec_.token_types.empty()) return false;
  const TokenType t = spec_.token_types[static_cast<size_t>(id)];
  return t == TokenType::kControl;
}

}  // namespace llmserve
