#include "engine/chat/jinja_unicode.h"

namespace llmserve::jinja {

std::vector<uint32_t> decode_utf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80             ? 1
               : (c & 0xe0) == 0xc0 ? 2
               : (c & 0xf0) == 0xe0 ? 3
               : (c & 0xf8) == 0xf0 ? 4
                                    : 0;
    bool ok = n > 0 && i + n <= s.size();
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; ok && k < n; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (!ok) {
      out.push_back(kRawByteBase + c);
      ++i;
    } else {
      out.push_back(cp);
      i += n;
    }
  }
  return out;
}

void append_code_point(std::string& out, uint32_t cp) {
  if (cp >= kRawByteBase) {
    out += static_cast<char>(cp - kRawByteBase);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

namespace {

// Ranges where upper and lower case alternate: even code point upper (or odd, when odd_upper).
struct PairRange {
  uint32_t first, last;
  bool odd_upper;
};
constexpr PairRange kPairs[] = {
    {0x0100, 0x012f, false}, {0x0132, 0x0137, false}, {0x0139, 0x0148, true},
    {0x014a, 0x0177, false}, {0x0179, 0x017e, true},  {0x0460, 0x0481, false},
    {0x048a, 0x04bf, false}, {0x1e00, 0x1e95, false}, {0x1ea0, 0x1eff, false},
};

// Ranges mapped by a fixed offset: [upper_first, upper_last] <-> lower = upper + delta.
struct ShiftRange {
  uint32_t first, last;
  uint32_t delta;
};
constexpr ShiftRange kShifts[] = {
    {'A', 'Z', 0x20},       {0x00c0, 0x00d6, 0x20}, {0x00d8, 0x00de, 0x20}, {0x0391, 0x03a1, 0x20},
    {0x03a3, 0x03ab, 0x20}, {0x0388, 0x038a, 0x25}, {0x038e, 0x038f, 0x3f}, {0x0410, 0x042f, 0x20},
    {0x0400, 0x040f, 0x50}, {0x0531, 0x0556, 0x30}, {0xff21, 0xff3a, 0x20},
};

}  // namespace

uint32_t cp_lower(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 0x20 : cp;
  for (const auto& r : kShifts) {
    if (cp >= r.first && cp <= r.last) return cp + r.delta;
  }
  for (const auto& r : kPairs) {
    if (cp >= r.first && cp <= r.last && ((cp & 1) == (r.odd_upper ? 1u : 0u))) return cp + 1;
  }
  if (cp == 0x0178) return 0x00ff;
  if (cp == 0x0386) return 0x03ac;
  if (cp == 0x038c) return 0x03cc;
  if (cp == 0x0130) return 'i';
  return cp;
}

uint32_t cp_upper(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 0x20 : cp;
  for (const auto& r : kShifts) {
    if (cp >= r.first + r.delta && cp <= r.last + r.delta) return cp - r.delta;
  }
  for (const auto& r : kPairs) {
    if (cp >= r.first && cp <= r.last && ((cp & 1) != (r.odd_upper ? 1u : 0u))) return cp - 1;
  }
  switch (cp) {
    case 0x00ff:
      return 0x0178;
    case 0x00b5:
      return 0x039c;
    case 0x0131:
      return 'I';
    case 0x017f:
      return 'S';
    case 0x03ac:
      return 0x0386;
    case 0x03cc:
      return 0x038c;
    case 0x03c2:
      return 0x03a3;
    default:
      return cp;
  }
}

bool cp_is_cased(uint32_t cp) {
  return cp_upper(cp) != cp || cp_lower(cp) != cp || cp == 0x00df;
}

namespace {
void append_upper(std::string& out, uint32_t cp) {
  if (cp == 0x00df) {
    out += "SS";
  } else {
    append_code_point(out, cp_upper(cp));
  }
}
}  // namespace

std::string unicode_upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (uint32_t cp : decode_utf8(s)) append_upper(out, cp);
  return out;
}

std::string unicode_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (uint32_t cp : decode_utf8(s)) append_code_point(out, cp_lower(cp));
  return out;
}

std::string unicode_capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (uint32_t cp : decode_utf8(s)) {
    if (first)
      append_upper(out, cp);
    else
      append_code_point(out, cp_lower(cp));
    first = false;
  }
  return out;
}

std::string unicode_title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for (uint32_t cp : decode_utf8(s)) {
    if (prev_cased)
      append_code_point(out, cp_lower(cp));
    else
      append_upper(out, cp);
    prev_cased = cp_is_cased(cp);
  }
  return out;
}

}  // namespace llmserve::jinja
