#include "engine/tokenizer/byte_unicode_map.h"

#include <array>

#include "engine/tokenizer/utf8.h"

namespace llmserve {
namespace {

struct ByteMap {
  std::array<std::string, 256> to_unicode;
  std::array<int16_t, 512> to_byte;

  ByteMap() {
    to_byte.fill(-1);
    uint32_t next_extra = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? b : next_extra++;
      utf8_append(to_unicode[b], cp);
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) {
  return byte_map().to_unicode[b];
}

int unicode_to_byte(uint32_t cp) {
  return cp < 512 ? byte_map().to_byte[cp] : -1;
}

}  // namespace llmserve
