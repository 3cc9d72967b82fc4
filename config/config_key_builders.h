// The typed builders behind config_keys.cpp's table: each makes one ConfigKey that parses,
// range-checks and prints one Config member. Only config_keys.cpp includes this.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config_keys.h"
#include "config/value_parse.h"

namespace llmserve::key_builders {

using Aliases = std::vector<std::string_view>;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

inline std::string quoted(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

inline std::string format_double(double v) {
  char buf[64];
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, ptr) : std::to_string(v);
}

inline std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

// Scalar text or an error for null / list values.
inline Result<std::string> scalar_of(const RawValue& v, KeyType type) {
  if (v.kind == RawValue::Kind::kScalar) return v.scalar;
  return invalid_argument("expected " + std::string(to_string(type)) + ", got " +
                          (v.kind == RawValue::Kind::kNull ? "nothing (null)" : "a list"));
}

template <typename S>
using SectionPtr = S Config::*;

template <typename S, typename T>
ConfigKey int_key(std::string_view section, std::string_view name, SectionPtr<S> sec, T S::*m,
                  int64_t lo, int64_t hi, std::string help, Aliases aliases = {},
                  bool power_of_two = false) {
  std::string range = hi == kInt64Max ? ">= " + std::to_string(lo)
                                      : "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (power_of_two) range += ", power of two";
  auto set = [=](Config& c, const RawValue& raw) -> Status {
    LLMSERVE_ASSIGN_OR_RETURN(const std::string text, scalar_of(raw, KeyType::kInt));
    LLMSERVE_ASSIGN_OR_RETURN(const int64_t v, parse_int(text));
    const bool pow2_ok = !power_of_two || (v > 0 && (v & (v - 1)) == 0);
    if (v < lo || v > hi || !pow2_ok) {
      const std::string bounds =
          hi == kInt64Max ? ">= " + std::to_string(lo)
                          : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
      return invalid_argument(std::string(power_of_two ? "must be a power of two " : "must be ") +
                              bounds + ", got " + std::to_string(v));
    }
    (c.*sec).*m = static_cast<T>(v);
    return Status::ok();
  };
  auto get = [=](const Config& c) { return std::to_string((c.*sec).*m); };
  return {
      section, name, KeyType::kInt, std::move(help), std::move(range), std::move(aliases), false,
      set,     get};
}

template <typename S>
ConfigKey double_key(std::string_view section, std::string_view name, SectionPtr<S> sec,
                     double S::*m, double lo, double hi, bool lo_open, std::string help,
                     Aliases aliases = {}) {
  const std::string range =
      (lo_open ? "(" : "[") + format_double(lo) + ", " + format_double(hi) + "]";
  auto set = [=](Config& c, const RawValue& raw) -> Status {
    LLMSERVE_ASSIGN_OR_RETURN(const std::string text, scalar_of(raw, KeyType::kDouble));
    LLMSERVE_ASSIGN_OR_RETURN(const double v, parse_double(text));
    if (v > hi || v < lo || (lo_open && v == lo)) {
      return invalid_argument("must be a number in " + range + ", got " + format_double(v));
    }
    (c.*sec).*m = v;
    return Status::ok();
  };
  auto get = [=](const Config& c) { return format_double((c.*sec).*m); };
  return {section, name, KeyType::kDouble, std::move(help), range, std::move(aliases), false,
          set,     get};
}

template <typename S>
ConfigKey size_key(std::string_view section, std::string_view name, SectionPtr<S> sec,
                   uint64_t S::*m, uint64_t lo, uint64_t hi, std::string help,
                   Aliases aliases = {}) {
  const std::string range = "[" + format_size(lo) + ", " + format_size(hi) + "]";
  auto set = [=](Config& c, const RawValue& raw) -> Status {
    LLMSERVE_ASSIGN_OR_RETURN(const std::string text, scalar_of(raw, KeyType::kSize));
    LLMSERVE_ASSIGN_OR_RETURN(const uint64_t v, parse_size(text));
    if (v < lo || v > hi) {
      return invalid_argument("must be a size in " + range + ", got " + quoted(text) + " (" +
                              std::to_string(v) + " bytes)");
    }
    (c.*sec).*m = v;
    return Status::ok();
  };
  auto get = [=](const Config& c) { return format_size((c.*sec).*m); };
  return {section, name, KeyType::kSize, std::move(help), range, std::move(aliases), false,
          set,     get};
}

template <typename S>
ConfigKey bool_key(std::string_view section, std::string_view name, SectionPtr<S> sec, bool S::*m,
                   std::string help, Aliases aliases = {}) {
  auto set = [=](Config& c, const RawValue& raw) -> Status {
    LLMSERVE_ASSIGN_OR_RETURN(const std::string text, scalar_of(raw, KeyType::kBool));
    LLMSERVE_ASSIGN_OR_RETURN(const bool v, parse_bool(text));
    (c.*sec).*m = v;
    return Status::ok();
  };
  auto get = [=](const Config& c) { return std::string((c.*sec).*m ? "true" : "false"); };
  return {section, name, KeyType::kBool, std::move(help), "true|false", std::move(aliases), false,
          set,     get};
}

// A null value is the empty string ("key:" with nothing after it in YAML).
template <typename S>
ConfigKey string_key(std::string_view section, std::string_view name, SectionPtr<S> sec,
                     std::string S::*m, bool non_empty, std::string help, Aliases aliases = {}) {
  auto set = [=](Config& c, const RawValue& raw) -> Status {
    if (raw.kind == RawValue::Kind::kList) return invalid_argument("expected a string, got a list");
    if (non_empty && trim(raw.scalar).empty()) return invalid_argument("must not be empty");
    (c.*sec).*m = raw.kind == RawValue::Kind::kNull ? std::string() : raw.scalar;
    return Status::ok();
  };
  auto get = [=](const Config& c) { return (c.*sec).*m; };
  return {section,
          name,
          KeyType::kString,
          std::move(help),
          non_empty ? "non-empty" : "",
          std::move(aliases),
          false,
          set,
          get};
}

// A scalar is read as a comma-separated list; null is the empty list.
template <typename S>
ConfigKey list_key(std::string_view section, std::string_view name, SectionPtr<S> sec,
                   std::vector<std::string> S::*m, std::string help, Aliases aliases = {},
                   bool secret = false) {
  auto set = [=](Config& c, const RawValue& raw) -> Status {
    std::vector<std::string> items;
    if (raw.kind == RawValue::Kind::kScalar) {
      items = split_list(raw.scalar);
    } else if (raw.kind == RawValue::Kind::kList) {
      for (const std::string& item : raw.items) {
        const std::string_view t = trim(item);
        if (t.empty()) return invalid_argument("list items must not be empty");
        items.emplace_back(t);
      }
    }
    (c.*sec).*m = std::move(items);
    return Status::ok();
  };
  auto get = [=](const Config& c) { return join((c.*sec).*m, ","); };
  return {section, name, KeyType::kStringList, std::move(help), "", std::move(aliases), secret,
          set,     get};
}

// A string that must be one of `choices` ("" among them: off); null is "".
template <typename S>
ConfigKey choice_key(std::string_view section, std::string_view name, SectionPtr<S> sec,
                     std::string S::*m, std::vector<std::string> choices, std::string help,
                     Aliases aliases = {}) {
  std::string listed;
  for (const std::string& ch : choices) listed += (listed.empty() ? "" : ", ") + quoted(ch);
  auto set = [=](Config& c, const RawValue& raw) -> Status {
    if (raw.kind == RawValue::Kind::kList) return invalid_argument("expected a string, got a list");
    std::string t(raw.kind == RawValue::Kind::kNull ? "" : trim(raw.scalar));
    std::transform(t.begin(), t.end(), t.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (std::find(choices.begin(), choices.end(), t) == choices.end()) {
      return invalid_argument("must be one of " + listed + ", got " + quoted(raw.scalar));
    }
    (c.*sec).*m = t;
    return Status::ok();
  };
  auto get = [=](const Config& c) { return (c.*sec).*m; };
  return {section, name, KeyType::kString, std::move(help), "", std::move(aliases), false,
          set,     get};
}

template <typename S, typename E>
ConfigKey enum_key(std::string_view section, std::string_view name, SectionPtr<S> sec, E S::*m,
                   std::vector<E> choices, std::string help, Aliases aliases = {}) {
  std::string range;
  for (E e : choices) range += (range.empty() ? "" : "|") + std::string(to_string(e));
  auto set = [=](Config& c, const RawValue& raw) -> Status {
    LLMSERVE_ASSIGN_OR_RETURN(const std::string text, scalar_of(raw, KeyType::kEnum));
    std::string t(trim(text));
    std::transform(t.begin(), t.end(), t.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    for (E e : choices) {
      if (to_string(e) == t) {
        (c.*sec).*m = e;
        return Status::ok();
      }
    }
    return invalid_argument("must be one of " + range + ", got " + quoted(text));
  };
  auto get = [=](const Config& c) { return std::string(to_string((c.*sec).*m)); };
  return {section, name, KeyType::kEnum, std::move(help), range, std::move(aliases), false,
          set,     get};
}

}  // namespace llmserve::key_builders
