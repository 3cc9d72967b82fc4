// UTF-8 helpers for the tokenizer: decoding one code point, encoding, and repairing ill-formed
// input the way Python's `bytes.decode("utf-8", errors="replace")` does (each maximal ill-formed
// subpart becomes one U+FFFD), so that our ids match an oracle that only accepts valid text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llmserve {

// Length in bytes (1..4) of the well-formed UTF-8 sequence at s[pos], or 0 when it is ill-formed
// or truncated. Precondition: pos < s.size().
size_t utf8_sequence_length(std::string_view s, size_t pos);

// Decodes the code point at s[pos] and advances pos; an ill-formed byte yields U+FFFD and
// advances by one. Precondition: pos < s.size().
uint32_t utf8_next(std::string_view s, size_t& pos);

void utf8_append(std::string& out, uint32_t cp);

bool utf8_is_valid(std::string_view s);

// Number of trailing bytes of s that form a valid but unfinished multi-byte sequence (0-3): bytes
// a later chunk could still complete. Sanitizing s split where this is 0 gives the same bytes as
// sanitizing it whole.
size_t utf8_incomplete_tail(std::string_view s);

// A copy of s where every maximal ill-formed subpart is replaced by U+FFFD (EF BF BD).
std::string utf8_sanitize(std::string_view s);

}  // namespace llmserve
