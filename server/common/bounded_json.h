// JSON a client sent, parsed only after a pass that builds nothing has bounded it. nlohmann's tree
// costs far more than its text: an array nested in an array is two heap blocks (~64 bytes) for 2
// bytes of `[]`, a member of an object ~100 bytes, so a few MiB of `[[[[...` became gigabytes.
// The first pass (json::sax_parse with a counting handler) stops at the first byte past
// `max_depth` levels or past the tree budget; only text within both is parsed into a tree.
// Every JSON text a request carries goes through here: HTTP bodies of every route, and the JSON
// strings inside gRPC fields (kv_transfer_params_json, structural tags, JSON schemas).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"

namespace llmserve {

struct JsonBounds {
  // Arrays and objects open at once; the top-level container is level 1 (config
  // server.max_json_depth). Above the 4 x 64 + 8 JSON levels engine/grammar's schema check lets
  // a schema have (engine.grammar_max_schema_depth 64), plus the levels a body wraps it in.
  int32_t max_depth = 320;
  // Heap bytes the parsed tree may take, as measure_json estimates them (config
  // server.max_json_memory).
  uint64_t max_tree_bytes = 64ull << 20;
};

// What the building-free pass saw.
struct JsonShape {
  int32_t depth = 0;        // deepest nesting; 0 for a lone scalar
  uint64_t values = 0;      // every value, containers and object keys included
  uint64_t tree_bytes = 0;  // estimated heap bytes of nlohmann::json's tree (glibc block sizes)
};

// One pass over `text` that allocates no tree (only the parser's own token buffer). `field` names
// what the text is for the error message: "" = the request body ("request body is not valid
// JSON: ...", code invalid_json over HTTP), else a request field ("<field>: is not valid JSON").
// INVALID_ARGUMENT when the text is not one JSON value, nests deeper than bounds.max_depth, or its
// tree would pass bounds.max_tree_bytes; each message names the limit and its config key.
Result<JsonShape> measure_json(std::string_view text, const JsonBounds& bounds,
                               std::string_view field = "");

// measure_json, then the tree. Any JSON value (callers check the type they expect).
Result<nlohmann::json> parse_bounded_json(std::string_view text, const JsonBounds& bounds,
                                          std::string_view field = "");
// The same, keeping object members in their order (JSON schemas whose order matters).
Result<nlohmann::ordered_json> parse_bounded_ordered_json(std::string_view text,
                                                          const JsonBounds& bounds,
                                                          std::string_view field = "");

// For JSON a client may also send as plain text (a tool call's `arguments` in the history):
// nullopt when `text` is not JSON, an error only past a bound.
Result<std::optional<nlohmann::json>> parse_bounded_json_if_valid(std::string_view text,
                                                                  const JsonBounds& bounds,
                                                                  std::string_view field);

}  // namespace llmserve
