// Reading tests/fixtures/tiny_gemma3_vision (made by tests/reference/make_tiny_gemma3_vision.py).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmserve::vision::testing {

// max |a - b| relative to max |b|.
inline double rel_diff(const float* a, const float* b, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    num = std::max(num, static_cast<double>(std::fabs(a[i] - b[i])));
    den = std::max(den, static_cast<double>(std::fabs(b[i])));
  }
  return num / std::max(den, 1e-12);
}

inline std::string fixture_dir() {
  return std::string(LLMSERVE_FIXTURES_DIR) + "/tiny_gemma3_vision";
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline std::vector<float> read_f32(const std::string& path) {
  const std::vector<uint8_t> b = read_bytes(path);
  std::vector<float> out(b.size() / 4);
  std::memcpy(out.data(), b.data(), out.size() * 4);
  return out;
}

inline nlohmann::json expected() {
  std::ifstream f(fixture_dir() + "/expected.json");
  return nlohmann::json::parse(f);
}

inline std::vector<uint8_t> image_bytes(const std::string& name) {
  return read_bytes(fixture_dir() + "/images/" + name);
}

}  // namespace llmserve::vision::testing
