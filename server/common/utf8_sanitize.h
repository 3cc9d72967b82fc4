// Replaces invalid UTF-8 (e.g. a token that is half of a multi-byte character) with U+FFFD,
// for wire formats that require valid UTF-8 strings (protobuf `string`).
#pragma once

#include <string>
#include <string_view>

namespace llmserve {

std::string sanitize_utf8(std::string_view s);

}  // namespace llmserve
