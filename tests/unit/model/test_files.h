// Helpers shared by the model tests: reading fixture files.
#pragma once

#include <cstddef>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

namespace llmserve::testing {

inline std::string fixture_path(const std::string& rel) {
  return std::string(LLMSERVE_FIXTURES_DIR) + "/" + rel;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline std::span<const std::byte> as_bytes(const std::vector<uint8_t>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size()};
}

}  // namespace llmserve::testing
