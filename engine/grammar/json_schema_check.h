// Checks a JSON Schema before it is compiled: its size (nesting depth and subschema count, which
// bound xgrammar's compile time and memory: compile time grows about as depth^3) and the
// keywords xgrammar 0.2.9 would otherwise ignore silently, so the output could break the schema.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace llmserve {

struct SchemaLimits {
  int32_t max_depth = 64;     // nested subschemas (properties, items, anyOf, ...) from the root
  int32_t max_nodes = 10000;  // subschemas in the whole document ($defs included)
};

// OK, or INVALID_ARGUMENT naming the keyword and where it is ("uniqueItems (at
// /properties/tags) is not supported ...") or the limit that was passed.
Status check_json_schema(const std::string& schema_text, const SchemaLimits& limits);

}  // namespace llmserve
