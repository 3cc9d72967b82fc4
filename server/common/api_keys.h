// API-key checks shared by HTTP (Authorization header) and gRPC (authorization metadata).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

// Compares in time that depends only on the lengths, never on where the bytes differ.
bool constant_time_equals(std::string_view a, std::string_view b);

class ApiKeys {
 public:
  explicit ApiKeys(std::vector<std::string> keys);
  bool enabled() const { return !keys_.empty(); }
  // True when auth is off or `authorization` is "Bearer <key>" with a configured key.
  // Every configured key is compared, so the time does not reveal which one matched.
  bool authorize(std::string_view authorization) const;

 private:
  std::vector<std::string> keys_;
};

// Reads one key per line; blank lines and '#' comments skipped. Empty result on a missing file.
std::vector<std::string> read_api_key_file(const std::string& path, bool* ok = nullptr);

}  // namespace llmserve
