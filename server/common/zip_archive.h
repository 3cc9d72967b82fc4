// A zip archive of a few files, stored (no compression), written in memory: what the gateway's
// GetTokenizer expects (its `zip` reader accepts stored entries). Names are plain relative paths.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

struct ZipEntry {
  std::string name;
  std::string bytes;
};

// The archive's bytes. Entries must be < 4 GiB each and fewer than 65535 (no zip64).
std::string make_stored_zip(const std::vector<ZipEntry>& entries);

// CRC-32 (IEEE 802.3, as zip and gzip use it).
uint32_t crc32_ieee(std::string_view bytes);

}  // namespace llmserve
