// JSON Schemas nested inside a larger one (a tool's parameters under the tool-call reply schema,
// a response_format schema as the reply's "response"): their "#/$defs/..." references resolve
// against the document's root, so their definitions must move there.
#pragma once

#include <nlohmann/json.hpp>

namespace llmserve {

// Moves `schema`'s "$defs" and "definitions" into `defs` (the root "$defs" object of the document
// `schema` is nested in) and rewrites its references ("#/$defs/X", "#/definitions/X", and paths
// below them) to point there. A name that `defs` already holds with another value is renamed
// (X_2, X_3, ...). A schema that is not an object, or has no definitions, is left as it is.
void hoist_schema_definitions(nlohmann::ordered_json& schema, nlohmann::ordered_json& defs);

}  // namespace llmserve
