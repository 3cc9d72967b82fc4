// Code-point helpers for Python's str case methods: UTF-8 decoding that keeps invalid bytes, and
// simple case mapping for Latin, Greek, Cyrillic, Armenian and fullwidth letters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve::jinja {

// Invalid bytes decode to kRawByteBase + byte and encode back to the same byte.
inline constexpr uint32_t kRawByteBase = 0x110000;
std::vector<uint32_t> decode_utf8(std::string_view s);
void append_code_point(std::string& out, uint32_t cp);

uint32_t cp_upper(uint32_t cp);
uint32_t cp_lower(uint32_t cp);
bool cp_is_cased(uint32_t cp);

// Python str.upper() / lower() / capitalize() / title().
std::string unicode_upper(std::string_view s);
std::string unicode_lower(std::string_view s);
std::string unicode_capitalize(std::string_view s);
std::string unicode_title(std::string_view s);

}  // namespace llmserve::jinja
