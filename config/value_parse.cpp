#include "config/value_parse.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

namespace llmserve {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string quoted(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

}  // namespace

std::string_view trim(std::string_view text) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

Result<bool> parse_bool(std::string_view text) {
  const std::string t = lower(trim(text));
  if (t == "true" || t == "yes" || t == "on" || t == "1") return true;
  if (t == "false" || t == "no" || t == "off" || t == "0") return false;
  return invalid_argument("expected a boolean (true/false), got " + quoted(text));
}

Result<int64_t> parse_int(std::string_view text) {
  std::string_view t = trim(text);
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec == std::errc::invalid_argument || ptr != t.data() + t.size()) {
    return invalid_argument("expected an integer, got " + quoted(text));
  }
  if (ec == std::errc::result_out_of_range) {
    return invalid_argument("integer out of the 64-bit range, got " + quoted(text));
  }
  return value;
}

Result<double> parse_double(std::string_view text) {
  std::string_view t = trim(text);
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  double value = 0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size() || !std::isfinite(value)) {
    return invalid_argument("expected a number, got " + quoted(text));
  }
  return value;
}

Result<uint64_t> parse_size(std::string_view text) {
  const std::string_view t = trim(text);
  const Status bad = invalid_argument(
      "expected a size in bytes (e.g. 1048576, 512MiB, 2GiB, 8MB), got " + quoted(text));
  size_t num_end = 0;
  while (num_end < t.size() &&
         (std::isdigit(static_cast<unsigned char>(t[num_end])) || t[num_end] == '.')) {
    ++num_end;
  }
  const std::string_view number = t.substr(0, num_end);
  const std::string unit = lower(trim(t.substr(num_end)));
  if (number.empty()) return bad;

  static const std::array<std::pair<std::string_view, double>, 10> kUnits = {{
      {"b", 1.0},
      {"kb", 1e3},
      {"kib", 1024.0},
      {"mb", 1e6},
      {"mib", 1048576.0},
      {"gb", 1e9},
      {"gib", 1073741824.0},
      {"tb", 1e12},
      {"tib", 1099511627776.0},
      {"", 1.0},
  }};
  const auto it =
      std::find_if(kUnits.begin(), kUnits.end(), [&](const auto& u) { return u.first == unit; });
  if (it == kUnits.end()) return bad;

  if (number.find('.') == std::string_view::npos) {
    uint64_t n = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
    if (ec != std::errc() || ptr != number.data() + number.size()) return bad;
    const auto mult = static_cast<uint64_t>(it->second);
    if (n != 0 && mult > std::numeric_limits<uint64_t>::max() / n) {
      return invalid_argument("size too large, got " + quoted(text));
    }
    return n * mult;
  }
  if (unit.empty() || unit == "b") return bad;  // fractional bytes make no sense
  double x = 0;
  const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), x);
  if (ec != std::errc() || ptr != number.data() + number.size()) return bad;
  const double bytes = std::floor(x * it->second);
  if (!(bytes < 18446744073709551616.0))
    return invalid_argument("size too large, got " + quoted(text));
  return static_cast<uint64_t>(bytes);
}

std::string format_size(uint64_t bytes) {
  static const std::array<std::pair<const char*, uint64_t>, 4> kUnits = {{
      {"TiB", 1ull << 40},
      {"GiB", 1ull << 30},
      {"MiB", 1ull << 20},
      {"KiB", 1ull << 10},
  }};
  if (bytes != 0) {
    for (const auto& [name, mult] : kUnits) {
      if (bytes % mult == 0) return std::to_string(bytes / mult) + name;
    }
  }
  return std::to_string(bytes);
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = trim(text.substr(start, comma - start));
    if (!item.empty()) out.emplace_back(item);
    start = comma + 1;
  }
  return out;
}

}  // namespace llmserve
