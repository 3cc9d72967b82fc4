// The GPT-2 byte <-> unicode mapping used by byte-level BPE vocabularies: every byte value is
// shown as one printable code point (e.g. ' ' -> 'Ġ' U+0120, '\n' -> 'Ċ' U+010A).
#pragma once

#include <cstdint>
#include <string>

namespace llmserve {

// UTF-8 text of the code point that stands for byte b.
const std::string& byte_to_unicode(uint8_t b);
// The byte a code point stands for, or -1 when cp is not in the mapping.
int unicode_to_byte(uint32_t cp);

}  // namespace llmserve
