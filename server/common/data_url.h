// RFC 2397 data URLs ("data:image/png;base64,iVBOR...") and standard base64 (RFC 4648, padding
// optional, no whitespace): what OpenAI image_url parts and Anthropic base64 image blocks carry.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace llmserve {

// The bytes of base64 text; INVALID_ARGUMENT naming the offset of a character outside the
// alphabet, or a length that is not a whole number of bytes. At most max_bytes decoded bytes
// (more: INVALID_ARGUMENT naming the limit, before anything is decoded).
Result<std::string> decode_base64(std::string_view text, size_t max_bytes);

struct DataUrl {
  std::string media_type;  // "image/png"; "" when the URL names none
  std::string bytes;
};

// A base64 data URL (a URL without ";base64" is refused: images are binary).
Result<DataUrl> parse_data_url(std::string_view url, size_t max_bytes);

}  // namespace llmserve
