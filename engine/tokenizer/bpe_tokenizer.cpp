#include "engine/tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "engine/tokenizer/byte_unicode_map.h"
#include "engine/tokenizer/utf8.h"

namespace llmserve {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁"

bool is_matchable_special(TokenType t) {
  return t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
}

// "<0xNN>" -> NN, or -1.
int parse_byte_token(std::string_view s) {
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return -1;
  int v = 0;
  for (char c : s.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= c - '0';
    else if (c >= 'A' && c <= 'F')
      v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f')
      v |= c - 'a' + 10;
    else
      return -1;
  }
  return v;
}

std::string byte_level_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    const size_t start = pos;
    const uint32_t cp = utf8_next(token, pos);
    const int b = unicode_to_byte(cp);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(token.substr(start, pos - start));
    }
  }
  return out;
}

std::string sentencepiece_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    if (token.compare(pos, kSpaceMark.size(), kSpaceMark) == 0) {
      out.push_back(' ');
      pos += kSpaceMark.size();
    } else {
      out.push_back(token[pos++]);
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> BpeTokenizer::build(TokenizerSpec spec) {
  std::unique_ptr<BpeTokenizer> tok(new BpeTokenizer(std::move(spec)));
  LLMSERVE_RETURN_IF_ERROR(tok->init());
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Status BpeTokenizer::init() {
  const auto n = static_cast<int32_t>(spec_.tokens.size());
  if (n == 0) return invalid_argument("tokenizer vocab is empty");
  if (!spec_.token_types.empty() && spec_.token_types.size() != spec_.tokens.size()) {
    return invalid_argument("tokenizer token_type count " +
                            std::to_string(spec_.token_types.size()) +
                            " differs from the token count " + std::to_string(n));
  }
  for (int32_t id : {spec_.bos_id, spec_.eos_id, spec_.unk_id, spec_.pad_id}) {
    if (id >= n)
      return invalid_argument("special token id " + std::to_string(id) + " is past the vocab");
  }
  const bool spm = spec_.kind == TokenizerKind::kSentencePieceBpe;
  BpeModel::Options options;
  options.merge_by_score = spm && spec_.merges.empty();
  options.byte_fallback = spm;
  options.use_unk = spm;
  options.fuse_unk = spm;
  options.ignore_merges = spec_.ignore_merges;
  LLMSERVE_ASSIGN_OR_RETURN(BpeModel model, BpeModel::create(spec_, options));
  model_ = std::make_unique<BpeModel>(std::move(model));
  if (!spm) {
    std::vector<std::string> patterns = spec_.pre_patterns;
    if (patterns.empty()) {
      LLMSERVE_ASSIGN_OR_RETURN(patterns, PreTokenizer::patterns_for(spec_.pre));
    }
    LLMSERVE_ASSIGN_OR_RETURN(pre_, PreTokenizer::create(patterns));
  }

  std::vector<std::pair<std::string_view, int32_t>> specials;
  bytes_.resize(n);
  for (int32_t id = 0; id < n; ++id) {
    const std::string& text = spec_.tokens[id];
    const TokenType t = type_of(id);
    if (is_matchable_special(t)) {
      specials.emplace_back(text, id);
      bytes_[id] = text;
    } else if (spm) {
      const int b = parse_byte_token(text);
      bytes_[id] = (b >= 0 && (t == TokenType::kByte || spec_.token_types.empty()))
                       ? std::string(1, static_cast<char>(b))
                       : sentencepiece_bytes(text);
    } else {
      bytes_[id] = byte_level_bytes(text);
    }
  }
  specials_ = SpecialTokenSplitter(std::move(specials));

  max_token_bytes_ = 0;
  if (spm) {
    bool every_byte_has_fallback = true;
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      every_byte_has_fallback = every_byte_has_fallback && model_->find(name) >= 0;
    }
    if (every_byte_has_fallback) {
      for (const std::string& t : spec_.tokens) {
        max_token_bytes_ = std::max(max_token_bytes_, t.size());
      }
    }
  } else {
    for (int b = 0; b < 256; ++b) {
      byte_known_[b] = model_->find(byte_to_unicode(static_cast<uint8_t>(b))) >= 0;
    }
    for (const std::string& raw : bytes_) max_token_bytes_ = std::max(max_token_bytes_, raw.size());
  }
  return Status::ok();
}

TokenType BpeTokenizer::type_of(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= spec_.token_types.size()) return TokenType::kNormal;
  return spec_.token_types[id];
}

bool BpeTokenizer::surely_over(std::string_view text, size_t have, size_t limit) const {
  if (have > limit) return true;
  if (max_token_bytes_ == 0) return false;
  const size_t room = limit - have;
  auto min_ids = [&](size_t bytes) { return (bytes + max_token_bytes_ - 1) / max_token_bytes_; };
  if (min_ids(text.size()) <= room) return false;  // cannot tell even if every byte counts
  if (spec_.kind == TokenizerKind::kSentencePieceBpe) return true;
  size_t known = 0;
  for (char c : text) known += byte_known_[static_cast<uint8_t>(c)];
  return min_ids(known) > room;
}

bool BpeTokenizer::encode_text(std::string_view text, bool at_start, size_t limit,
                               std::vector<int32_t>& out) const {
  if (spec_.kind == TokenizerKind::kSentencePieceBpe) {
    std::string word;
    word.reserve(text.size() + text.size() / 2 + 3);
    if (spec_.add_space_prefix) {
      const bool starts_with_mark =
          text.substr(0, kSpaceMark.size()) == kSpaceMark || (!text.empty() && text[0] == ' ');
      if (!spec_.space_prefix_first_only || (at_start && !starts_with_mark))
        word.append(kSpaceMark);
    }
    for (char c : text) {
      if (c == ' ') {
        word.append(kSpaceMark);
      } else {
        word.push_back(c);
      }
    }
    if (surely_over(word, out.size(), limit)) return false;
    model_->encode_word(word, out);
    return out.size() <= limit;
  }
  // Long texts repeat words: after the first 64 pieces, remember each piece's ids.
  size_t num_pieces = 0;
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache;
  std::vector<int32_t> cached_ids;
  std::string word;
  return pre_->split(text, [&](std::string_view piece) {
    const bool use_cache = ++num_pieces > 64;
    if (use_cache) {
      auto it = cache.find(piece);
      if (it != cache.end()) {
        out.insert(out.end(), cached_ids.begin() + it->second.first,
                   cached_ids.begin() + it->second.first + it->second.second);
        return out.size() <= limit;
      }
    }
    if (surely_over(piece, out.size(), limit)) return false;
    word.clear();
    for (char c : piece) word.append(byte_to_unicode(static_cast<uint8_t>(c)));
    const size_t before = out.size();
    model_->encode_word(word, out);
    if (use_cache && piece.size() <= 64) {
      cache.emplace(piece,
                    std::pair<uint32_t, uint32_t>(static_cast<uint32_t>(cached_ids.size()),
                                                  static_cast<uint32_t>(out.size() - before)));
      cached_ids.insert(cached_ids.end(), out.begin() + before, out.end());
    }
    return out.size() <= limit;
  });
}

bool BpeTokenizer::encode_into(std::string_view text, bool add_special, bool parse_special,
                               size_t limit, std::vector<int32_t>& out) const {
  if (add_special && spec_.add_bos && spec_.bos_id >= 0) out.push_back(spec_.bos_id);
  const std::string clean = utf8_sanitize(text);
  std::vector<SpecialTokenSplitter::Fragment> fragments;
  if (parse_special) {
    specials_.split(clean, fragments);
  } else if (!clean.empty()) {
    fragments.push_back({clean, -1});
  }
  for (const auto& f : fragments) {
    if (f.id >= 0) {
      out.push_back(f.id);
    } else if (!encode_text(f.text, f.text.data() == clean.data(), limit, out)) {
      return false;
    }
    if (out.size() > limit) return false;
  }
  if (add_special && spec_.add_eos && spec_.eos_id >= 0) out.push_back(spec_.eos_id);
  return out.size() <= limit;
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  std::vector<int32_t> out;
  encode_into(text, add_special, parse_special, std::numeric_limits<size_t>::max(), out);
  return out;
}

LimitedEncoding BpeTokenizer::encode_limited(std::string_view text, size_t max_tokens,
                                             bool add_special, bool parse_special) const {
  LimitedEncoding e;
  e.over_limit = !encode_into(text, add_special, parse_special, max_tokens, e.ids);
  if (e.over_limit && e.ids.size() > max_tokens) e.ids.resize(max_tokens + 1);
  return e;
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    if (skip_special && is_special(id)) continue;
    out.append(bytes_[id]);
  }
  if (spec_.kind == TokenizerKind::kSentencePieceBpe && spec_.add_space_prefix && !out.empty() &&
      out[0] == ' ') {
    out.erase(0, 1);
  }
  return out;
}

std::string BpeTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return bytes_[id];
}

const std::string& BpeTokenizer::token_text(int32_t id) const {
  static const std::string kEmpty;
  if (id < 0 || id >= vocab_size()) return kEmpty;
  return spec_.tokens[id];
}

bool BpeTokenizer::is_special(int32_t id) const {
  const TokenType t = type_of(id);
  return t == TokenType::kControl || t == TokenType::kUnknown;
}

}  // namespace llmserve
