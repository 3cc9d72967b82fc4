// server/common/bounded_json: the building-free pass agrees with nlohmann's own parser. The first
// byte picks the depth limit (1..64) and the second the tree budget (1 KiB..256 KiB); the rest is
// the JSON text. Text the pass accepts parses (and nests no deeper than the limit, with a tree
// within the budget's estimate); JSON it refuses is JSON past a bound, never valid JSON within
// both.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/common/bounded_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  llmserve::JsonBounds bounds;
  bounds.max_depth = 1 + data[0] % 64;
  bounds.max_tree_bytes = (1u + data[1]) << 10;
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  auto shape = llmserve::measure_json(text, bounds, "f");
  auto parsed = llmserve::parse_bounded_json(text, bounds, "f");
  if (shape.is_ok() != parsed.is_ok()) std::abort();
  if (shape.is_ok()) {
    if (shape->depth > bounds.max_depth || shape->tree_bytes > bounds.max_tree_bytes) std::abort();
    if (!nlohmann::json::accept(text.begin(), text.end())) std::abort();
    auto maybe = llmserve::parse_bounded_json_if_valid(text, bounds, "f");
    if (!maybe.is_ok() || !maybe->has_value() || **maybe != *parsed) std::abort();
    return 0;
  }
  // Refused: either not JSON (if_valid then gives nullopt, and nlohmann refuses it too), or past
  // a bound (if_valid refuses it as well, with the same message).
  auto maybe = llmserve::parse_bounded_json_if_valid(text, bounds, "f");
  const std::string& why = shape.status().message();
  if (!maybe.is_ok()) {
    if (maybe.status().message() != why) std::abort();
    if (why.rfind("f: nests ", 0) != 0 && why.rfind("f: would take ", 0) != 0) std::abort();
    return 0;
  }
  if (why.rfind("f: is not valid JSON", 0) != 0) std::abort();
  if (maybe->has_value() || nlohmann::json::accept(text.begin(), text.end())) std::abort();
  return 0;
}
