#include "server/common/data_url.h"

#include <array>
#include <cstdint>

namespace llmserve {
namespace {

constexpr std::array<int8_t, 256> make_table() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
  return t;
}
constexpr std::array<int8_t, 256> kTable = make_table();

}  // namespace

Result<std::string> decode_base64(std::string_view text, size_t max_bytes) {
  size_t n = text.size();
  size_t pad = 0;
  while (n > 0 && pad < 2 && text[n - 1] == '=') {
    --n;
    ++pad;
  }
  if (n % 4 == 1 || (pad > 0 && (n + pad) % 4 != 0)) {
    return invalid_argument("invalid base64: its length (" + std::to_string(text.size()) +
                            " characters) is not a whole number of bytes");
  }
  const size_t out_size = n / 4 * 3 + (n % 4 == 0 ? 0 : n % 4 - 1);
  if (out_size > max_bytes) {
    return invalid_argument("the image is " + std::to_string(out_size) + " bytes; at most " +
                            std::to_string(max_bytes) + " are accepted");
  }
  std::string out;
  out.reserve(out_size);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    const int8_t v = kTable[static_cast<unsigned char>(text[i])];
    if (v < 0) {
      return invalid_argument("invalid base64: character " + std::to_string(i) +
                              " is outside the base64 alphabet");
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

Result<DataUrl> parse_data_url(std::string_view url, size_t max_bytes) {
  if (url.substr(0, 5) != "data:") return invalid_argument("not a data: URL");
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) {
    return invalid_argument("invalid data URL: no ',' before the data");
  }
  std::string_view meta = url.substr(5, comma - 5);
  constexpr std::string_view kBase64 = ";base64";
  if (meta.size() < kBase64.size() || meta.substr(meta.size() - kBase64.size()) != kBase64) {
    return invalid_argument("the data URL must be base64 (data:<media type>;base64,<data>)");
  }
  meta.remove_suffix(kBase64.size());
  DataUrl out;
  out.media_type = std::string(meta.substr(0, meta.find(';')));
  LLMSERVE_ASSIGN_OR_RETURN(out.bytes, decode_base64(url.substr(comma + 1), max_bytes));
  return out;
}

}  // namespace llmserve
