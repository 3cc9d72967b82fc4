#include "engine/tokenizer/utf8.h"

namespace llmserve {
namespace {

// Number of continuation bytes after lead byte b, and the allowed range of the first one.
struct LeadInfo {
  int continuation;
  uint8_t lo, hi;
};

LeadInfo lead_info(uint8_t b) {
  if (b >= 0xC2 && b <= 0xDF) return {1, 0x80, 0xBF};
  if (b == 0xE0) return {2, 0xA0, 0xBF};
  if (b == 0xED) return {2, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {2, 0x80, 0xBF};
  if (b == 0xF0) return {3, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {3, 0x80, 0xBF};
  if (b == 0xF4) return {3, 0x80, 0x8F};
  return {-1, 0, 0};
}

// Bytes of the maximal prefix of a valid sequence at pos (>= 1), and whether it is complete.
size_t scan(std::string_view s, size_t pos, bool& complete) {
  const auto b = static_cast<uint8_t>(s[pos]);
  complete = false;
  if (b < 0x80) {
    complete = true;
    return 1;
  }
  const LeadInfo info = lead_info(b);
  if (info.continuation < 0) return 1;
  size_t n = 1;
  for (int k = 0; k < info.continuation; ++k) {
    if (pos + n >= s.size()) return n;
    const auto c = static_cast<uint8_t>(s[pos + n]);
    const uint8_t lo = k == 0 ? info.lo : 0x80;
    const uint8_t hi = k == 0 ? info.hi : 0xBF;
    if (c < lo || c > hi) return n;
    ++n;
  }
  complete = true;
  return n;
}

}  // namespace

size_t utf8_sequence_length(std::string_view s, size_t pos) {
  bool complete = false;
  const size_t n = scan(s, pos, complete);
  return complete ? n : 0;
}

size_t utf8_incomplete_tail(std::string_view s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const size_t i = n - back;
    const auto b = static_cast<uint8_t>(s[i]);
    if (b >= 0x80 && b <= 0xBF) continue;  // a continuation byte: look further back
    if (lead_info(b).continuation < 1) return 0;
    bool complete = false;
    return scan(s, i, complete) == back && !complete ? back : 0;
  }
  return 0;
}

uint32_t utf8_next(std::string_view s, size_t& pos) {
  const size_t n = utf8_sequence_length(s, pos);
  if (n == 0) {
    ++pos;
    return 0xFFFD;
  }
  const auto* p = reinterpret_cast<const uint8_t*>(s.data() + pos);
  pos += n;
  switch (n) {
    case 1:
      return p[0];
    case 2:
      return ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    case 3:
      return ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    default:
      return ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) |
             (p[3] & 0x3Fu);
  }
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool utf8_is_valid(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const size_t n = utf8_sequence_length(s, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

std::string utf8_sanitize(std::string_view s) {
  if (utf8_is_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t pos = 0; pos < s.size();) {
    bool complete = false;
    const size_t n = scan(s, pos, complete);
    if (complete) {
      out.append(s.substr(pos, n));
    } else {
      out.append("\xEF\xBF\xBD");
    }
    pos += n;
  }
  return out;
}

}  // namespace llmserve
