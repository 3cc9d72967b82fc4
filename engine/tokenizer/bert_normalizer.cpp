#include "engine/tokenizer/bert_normalizer.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include "engine/tokenizer/utf8.h"

namespace llmserve {
namespace {

bool is_cjk(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_space(uint32_t c) {
  return c == '\t' || c == '\n' || c == '\r' || u_isUWhiteSpace(static_cast<UChar32>(c));
}

bool is_control(uint32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const int8_t t = u_charType(static_cast<UChar32>(c));
  return t == U_CONTROL_CHAR || t == U_FORMAT_CHAR || t == U_UNASSIGNED || t == U_PRIVATE_USE_CHAR;
}

bool is_punctuation(uint32_t c) {
  if (c < 0x80) {
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
           (c >= 123 && c <= 126);
  }
  return u_ispunct(static_cast<UChar32>(c)) != 0;
}

// NFD of `in`, non-spacing marks dropped.
void strip_accents(const std::u32string& in, std::u32string& out) {
  UErrorCode err = U_ZERO_ERROR;
  const UNormalizer2* nfd = unorm2_getNFDInstance(&err);
  out.clear();
  UChar buf[32];
  for (char32_t c : in) {
    int32_t n = 0;
    if (c >= 0x80 && U_SUCCESS(err)) {
      UErrorCode e = U_ZERO_ERROR;
      n = unorm2_getDecomposition(nfd, static_cast<UChar32>(c), buf, 32, &e);
      if (U_FAILURE(e)) n = 0;
    }
    if (n <= 0) {  // no decomposition
      if (u_charType(static_cast<UChar32>(c)) != U_NON_SPACING_MARK) out.push_back(c);
      continue;
    }
    for (int32_t i = 0; i < n;) {
      UChar32 d;
      U16_NEXT(buf, i, n, d);
      if (u_charType(d) != U_NON_SPACING_MARK) out.push_back(static_cast<char32_t>(d));
    }
  }
}

// Each character's full lowercase mapping (context-free, as Rust's char::to_lowercase).
void lowercase(const std::u32string& in, std::u32string& out) {
  out.clear();
  for (char32_t c : in) {
    if (c < 0x80) {
      out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
      continue;
    }
    UChar src[2], dst[8];
    int32_t sn = 0;
    U16_APPEND_UNSAFE(src, sn, static_cast<UChar32>(c));
    UErrorCode e = U_ZERO_ERROR;
    const int32_t dn = u_strToLower(dst, 8, src, sn, "", &e);
    if (U_FAILURE(e) || dn <= 0) {
      out.push_back(c);
      continue;
    }
    for (int32_t i = 0; i < dn;) {
      UChar32 d;
      U16_NEXT(dst, i, dn, d);
      out.push_back(static_cast<char32_t>(d));
    }
  }
}

}  // namespace

std::vector<std::string> bert_words(std::string_view text, const TokenizerSpec::WordPiece& o) {
  std::u32string a, b;
  a.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const uint32_t c = utf8_next(text, pos);
    if (o.clean_text) {
      if (c == 0 || c == 0xFFFD || is_control(c)) continue;
      if (is_space(c)) {
        a.push_back(U' ');
        continue;
      }
    }
    if (o.chinese_chars && is_cjk(c)) {
      a.push_back(U' ');
      a.push_back(c);
      a.push_back(U' ');
      continue;
    }
    a.push_back(c);
  }
  if (o.strip_accents) {
    strip_accents(a, b);
    a.swap(b);
  }
  if (o.lowercase) {
    lowercase(a, b);
    a.swap(b);
  }
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (char32_t c : a) {
    if (is_space(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      utf8_append(word, c);
      flush();
    } else {
      utf8_append(word, c);
    }
  }
  flush();
  return words;
}

}  // namespace llmserve
