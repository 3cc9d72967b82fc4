#include "server/common/zip_archive.h"

#include <zlib.h>

#include <algorithm>

namespace llmserve {

namespace {

void put16(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>((v >> 8) & 0xff));
}

void put32(std::string& out, uint32_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}

// MS-DOS date and time of 1980-01-01 00:00 (a fixed time keeps the archive reproducible).
constexpr uint32_t kDosTime = 0;
constexpr uint32_t kDosDate = (0 << 9) | (1 << 5) | 1;

}  // namespace

uint32_t crc32_ieee(std::string_view bytes) {
  uLong c = crc32(0L, Z_NULL, 0);
  // zlib takes lengths as uInt: feed the bytes in pieces that fit.
  while (!bytes.empty()) {
    const auto n = static_cast<uInt>(std::min<size_t>(bytes.size(), 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(bytes.data()), n);
    bytes.remove_prefix(n);
  }
  return static_cast<uint32_t>(c);
}

std::string make_stored_zip(const std::vector<ZipEntry>& entries) {
  std::string out, central;
  for (const ZipEntry& e : entries) {
    const uint32_t offset = static_cast<uint32_t>(out.size());
    const uint32_t crc = crc32_ieee(e.bytes);
    const auto size = static_cast<uint32_t>(e.bytes.size());
    const auto name_len = static_cast<uint32_t>(e.name.size());
    // Local file header.
    put32(out, 0x04034b50);
    put16(out, 20);      // version needed: 2.0
    put16(out, 0x0800);  // flags: names are UTF-8
    put16(out, 0);       // method: stored
    put16(out, kDosTime);
    put16(out, kDosDate);
    put32(out, crc);
    put32(out, size);
    put32(out, size);
    put16(out, name_len);
    put16(out, 0);  // extra field length
    out += e.name;
    out += e.bytes;
    // Central directory record.
    put32(central, 0x02014b50);
    put16(central, (3 << 8) | 20);  // made by: Unix, 2.0
    put16(central, 20);
    put16(central, 0x0800);
    put16(central, 0);
    put16(central, kDosTime);
    put16(central, kDosDate);
    put32(central, crc);
    put32(central, size);
    put32(central, size);
    put16(central, name_len);
    put16(central, 0);               // extra
    put16(central, 0);               // comment
    put16(central, 0);               // disk number
    put16(central, 0);               // internal attributes
    put32(central, 0100644u << 16);  // external attributes: a regular file, rw-r--r--
    put32(central, offset);
    central += e.name;
  }
  const auto central_offset = static_cast<uint32_t>(out.size());
  out += central;
  // End of central directory.
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<uint32_t>(entries.size()));
  put16(out, static_cast<uint32_t>(entries.size()));
  put32(out, static_cast<uint32_t>(central.size()));
  put32(out, central_offset);
  put16(out, 0);  // comment length
  return out;
}

}  // namespace llmserve
