// Checks on a request's structured-output spec (GrammarSpec), whichever transport filled it.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/status.h"
#include "engine/grammar/grammar_spec.h"
#include "server/common/request_limits.h"

namespace llmserve {

// The request field that holds the spec's text or choices, for errors:
// "response_format.json_schema.schema", "structured_outputs.regex", "guided_choice", ...
std::string structured_output_field(const GrammarSpec& spec);

// A JSON Schema given as text -> its compact serialization. Not JSON, or not an object:
// INVALID_ARGUMENT naming `field`. Text over limits.max_grammar_bytes is rejected unparsed.
Result<std::string> normalize_json_schema(std::string_view text, std::string_view field,
                                          const RequestLimits& limits);

// Text at most limits.max_grammar_bytes and non-empty for regex / EBNF; choices non-empty, at
// most limits.max_grammar_choices entries of at most limits.max_grammar_choice_bytes.
Status validate_structured_output(const GrammarSpec& spec, const RequestLimits& limits);

}  // namespace llmserve
