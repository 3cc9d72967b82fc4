// UTF-8 helpers for streaming text: bytes from a tokenizer may split or break characters.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace llmserve {

// Number of trailing bytes of `s` that form a valid but unfinished multi-byte sequence (0-3):
// bytes a later chunk could still complete.
size_t utf8_incomplete_tail(std::string_view s);

// `s` with each maximal ill-formed subpart replaced by U+FFFD (Unicode's "maximal subpart"
// practice, as Rust's from_utf8_lossy and Python's errors="replace" do). Splitting a string
// where utf8_incomplete_tail() is 0 and sanitizing the halves gives the same bytes.
std::string sanitize_utf8(std::string_view s);

bool is_valid_utf8(std::string_view s);

}  // namespace llmserve
