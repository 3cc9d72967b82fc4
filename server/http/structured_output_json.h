// Structured-output request fields, read on /v1/completions and /v1/chat/completions:
//   OpenAI `response_format`: {"type": "text" | "json_object" | "json_schema", "json_schema":
//     {"name", "schema", "strict", "description"}};
//   vLLM `structured_outputs`: exactly one of json / regex / choice / grammar / json_object;
//   vLLM's older aliases `guided_json`, `guided_regex`, `guided_choice`, `guided_grammar`;
//   llama.cpp's server's `json_schema` (a JSON Schema) and `grammar` (GBNF, read as xgrammar's
//   EBNF, start rule `root`).
// At most one of them may ask for a grammar. Sizes are checked by validate_generation_request.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/grammar/grammar_spec.h"
#include "server/common/request_limits.h"

namespace llmserve {

// Leaves *out empty when the body asks for no grammar (or `response_format` type text).
// Errors: INVALID_ARGUMENT naming the field ("response_format.json_schema.schema: ...").
Status read_structured_output(const nlohmann::json& body, const RequestLimits& limits,
                              std::optional<GrammarSpec>* out);

// The body parser sorts object keys; a JSON-schema spec gets its schema text again from
// `ordered_body` (the same body parsed as ordered_json), in the caller's key order (properties
// are generated in that order).
void keep_schema_order(const nlohmann::ordered_json& ordered_body, GrammarSpec* spec);

}  // namespace llmserve
