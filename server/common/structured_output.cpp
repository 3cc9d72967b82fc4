#include "server/common/structured_output.h"

#include <nlohmann/json.hpp>

#include "server/common/bounded_json.h"
#include "server/common/field_checks.h"

namespace llmserve {

namespace {

const char* structured_outputs_key(GrammarKind kind) {
  switch (kind) {
    case GrammarKind::kJsonObject:
      return "json_object";
    case GrammarKind::kJsonSchema:
      return "json";
    case GrammarKind::kRegex:
      return "regex";
    case GrammarKind::kChoice:
      return "choice";
    case GrammarKind::kEbnf:
      return "grammar";
    case GrammarKind::kTaggedJson:
      return "json";
    case GrammarKind::kStructuralTag:
      return "structural_tag";
  }
  return "json";
}

Status check_size(std::string_view field, size_t bytes, const RequestLimits& limits) {
  if (static_cast<int64_t>(bytes) <= limits.max_grammar_bytes) return Status::ok();
  return field_error(field, "must be at most " + std::to_string(limits.max_grammar_bytes) +
                                " bytes, got " + std::to_string(bytes));
}

}  // namespace

std::string structured_output_field(const GrammarSpec& spec) {
  if (spec.field == "response_format") {
    return spec.kind == GrammarKind::kJsonSchema ? "response_format.json_schema.schema"
                                                 : "response_format";
  }
  if (spec.field == "structured_outputs") {
    return "structured_outputs." + std::string(structured_outputs_key(spec.kind));
  }
  return spec.field;
}

Result<std::string> normalize_json_schema(std::string_view text, std::string_view field,
                                          const RequestLimits& limits) {
  LLMSERVE_RETURN_IF_ERROR(check_size(field, text.size(), limits));
  // Ordered: the output lists properties in the order the schema gives them.
  LLMSERVE_ASSIGN_OR_RETURN(const nlohmann::ordered_json schema,
                            parse_bounded_ordered_json(text, limits.json_bounds, field));
  if (!schema.is_object()) return field_error(field, "expected a JSON Schema object");
  return schema.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Status validate_structured_output(const GrammarSpec& spec, const RequestLimits& limits) {
  const std::string field = structured_output_field(spec);
  LLMSERVE_RETURN_IF_ERROR(check_size(field, spec.text.size(), limits));
  switch (spec.kind) {
    case GrammarKind::kJsonObject:
    case GrammarKind::kJsonSchema:
    case GrammarKind::kTaggedJson:
      break;
    case GrammarKind::kRegex:
    case GrammarKind::kEbnf:
    case GrammarKind::kStructuralTag:
      if (spec.text.empty()) return field_error(field, "must not be empty");
      break;
    case GrammarKind::kChoice:
      if (spec.choices.empty()) return field_error(field, "must list at least one choice");
      if (static_cast<int64_t>(spec.choices.size()) > limits.max_grammar_choices) {
        return field_error(field, "at most " + std::to_string(limits.max_grammar_choices) +
                                      " choices are allowed, got " +
                                      std::to_string(spec.choices.size()));
      }
      for (const auto& c : spec.choices) {
        if (static_cast<int64_t>(c.size()) > limits.max_grammar_choice_bytes) {
          return field_error(field, "a choice is longer than " +
                                        std::to_string(limits.max_grammar_choice_bytes) + " bytes");
        }
      }
      break;
  }
  return Status::ok();
}

}  // namespace llmserve
