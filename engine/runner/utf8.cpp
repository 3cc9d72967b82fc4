#include "engine/runner/utf8.h"

#include <cstdint>

namespace llmserve {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the sequence a lead byte starts: 1-4, or 0 for a byte that cannot start one.
size_t sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Whether `b` may follow at position `pos` (1-3) of a sequence starting with `lead`.
bool valid_continuation(uint8_t lead, size_t pos, uint8_t b) {
  if (pos == 1) {
    if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
    if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
    if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
    if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  }
  return b >= 0x80 && b <= 0xBF;
}

// Bytes of the valid prefix of the sequence starting at s[i] (at least 1).
size_t valid_prefix(std::string_view s, size_t i, size_t len) {
  const auto lead = static_cast<uint8_t>(s[i]);
  size_t j = 1;
  while (j < len && i + j < s.size() &&
         valid_continuation(lead, j, static_cast<uint8_t>(s[i + j]))) {
    ++j;
  }
  return j;
}

}  // namespace

size_t utf8_incomplete_tail(std::string_view s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const size_t i = n - back;
    const auto b = static_cast<uint8_t>(s[i]);
    if (b >= 0x80 && b <= 0xBF) continue;  // a continuation byte: look further back
    const size_t len = sequence_length(b);
    if (len <= back) return 0;  // ASCII, invalid, or a finished sequence
    return valid_prefix(s, i, len) == back ? back : 0;
  }
  return 0;
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t len = sequence_length(static_cast<uint8_t>(s[i]));
    if (len == 1) {
      out.push_back(s[i++]);
      continue;
    }
    if (len == 0) {
      out.append(kReplacement);
      ++i;
      continue;
    }
    const size_t got = valid_prefix(s, i, len);
    if (got == len) {
      out.append(s.substr(i, len));
    } else {
      out.append(kReplacement);
    }
    i += got;
  }
  return out;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t len = sequence_length(static_cast<uint8_t>(s[i]));
    if (len == 0 || valid_prefix(s, i, len) != len) return false;
    i += len;
  }
  return true;
}

}  // namespace llmserve
