#include "engine/runner/detokenizer.h"

#include "engine/tokenizer/utf8.h"

namespace llmserve {

Detokenizer::Detokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                         std::span<const int32_t> context)
    : tokenizer_(tokenizer),
      skip_special_(skip_special_tokens),
      context_size_(context.size()),
      ids_(context.begin(), context.end()),
      read_offset_(context.size()) {}

std::string Detokenizer::decode(size_t begin, size_t end) const {
  if (begin >= end) return {};
  return tokenizer_.decode(std::span<const int32_t>(ids_).subspan(begin, end - begin),
                           skip_special_);
}

std::string Detokenizer::append(int32_t token_id) {
  ids_.push_back(token_id);
  const std::string prefix = decode(prefix_offset_, read_offset_);
  const std::string full = decode(prefix_offset_, ids_.size());
  if (full.size() <= prefix.size()) return {};
  const std::string_view delta = std::string_view(full).substr(prefix.size());
  if (utf8_incomplete_tail(delta) > 0) return {};
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  return utf8_sanitize(delta);
}

std::string Detokenizer::flush() {
  const std::string prefix = decode(prefix_offset_, read_offset_);
  const std::string full = decode(prefix_offset_, ids_.size());
  prefix_offset_ = read_offset_ = ids_.size();
  if (full.size() <= prefix.size()) return {};
  return utf8_sanitize(std::string_view(full).substr(prefix.size()));
}

}  // namespace llmserve
