#include "server/common/api_keys.h"

#include <fstream>

namespace llmserve {

bool constant_time_equals(std::string_view a, std::string_view b) {
  // Compare over the longer length so a prefix match costs the same as a total mismatch.
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = diff | static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

ApiKeys::ApiKeys(std::vector<std::string> keys) {
  for (auto& k : keys) {
    if (!k.empty()) keys_.push_back(std::move(k));
  }
}

bool ApiKeys::authorize(std::string_view authorization) const {
  if (keys_.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() <= kBearer.size()) return false;
  std::string_view scheme = authorization.substr(0, kBearer.size());
  bool scheme_ok = true;
  for (size_t i = 0; i < kBearer.size(); ++i) {
    const char c = scheme[i];
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const char want = (kBearer[i] >= 'A' && kBearer[i] <= 'Z')
                          ? static_cast<char>(kBearer[i] - 'A' + 'a')
                          : kBearer[i];
    if (lower != want) scheme_ok = false;
  }
  std::string_view token = authorization.substr(kBearer.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\r')) token.remove_suffix(1);
  bool match = false;
  for (const auto& key : keys_) {
    if (constant_time_equals(token, key)) match = true;
  }
  return scheme_ok && match;
}

std::vector<std::string> read_api_key_file(const std::string& path, bool* ok) {
  std::vector<std::string> keys;
  std::ifstream in(path);
  if (ok) *ok = static_cast<bool>(in);
  std::string line;
  while (std::getline(in, line)) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    const auto e = line.find_last_not_of(" \t\r");
    keys.push_back(line.substr(b, e - b + 1));
  }
  return keys;
}

}  // namespace llmserve
