#include "server/http/structured_output_json.h"

#include <string>
#include <utility>
#include <vector>

#include "server/common/structured_output.h"
#include "server/http/json_fields.h"

namespace llmserve {

using json_fields::field_error;
using json_fields::present;
using nlohmann::json;

namespace {

// `v` in the shape `kind` takes, read into a spec whose field is `field`; `where` names the
// value in errors.
Result<GrammarSpec> read_grammar_value(const json& v, GrammarKind kind, const std::string& field,
                                       const std::string& where, const RequestLimits& limits) {
  GrammarSpec spec;
  spec.kind = kind;
  spec.field = field;
  switch (kind) {
    case GrammarKind::kJsonSchema:
      if (v.is_object()) {
        spec.text = json_fields::dump(v);
      } else if (v.is_string()) {
        LLMSERVE_ASSIGN_OR_RETURN(spec.text,
                                  normalize_json_schema(v.get<std::string>(), where, limits));
      } else {
        return field_error(where, "expected a JSON Schema object or a string holding one");
      }
      break;
    case GrammarKind::kRegex:
    case GrammarKind::kEbnf:
    case GrammarKind::kStructuralTag:
      if (!v.is_string()) return field_error(where, "expected a string");
      spec.text = v.get<std::string>();
      break;
    case GrammarKind::kChoice:
      if (!v.is_array() || v.empty()) {
        return field_error(where, "expected a non-empty list of strings");
      }
      for (const auto& c : v) {
        if (!c.is_string()) return field_error(where, "expected a non-empty list of strings");
        spec.choices.push_back(c.get<std::string>());
      }
      break;
    case GrammarKind::kJsonObject:
      if (!v.is_boolean() || !v.get<bool>()) return field_error(where, "expected true");
      break;
    case GrammarKind::kTaggedJson:  // made by the tools code, never read from a request
      return field_error(where, "is not a request field");
  }
  return spec;
}

Result<std::optional<GrammarSpec>> read_response_format(const json& body) {
  if (!present(body, "response_format")) return std::optional<GrammarSpec>();
  const json& rf = body.at("response_format");
  if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string()) {
    return field_error("response_format", "expected an object with a string 'type'");
  }
  const std::string type = rf["type"].get<std::string>();
  if (type == "text") return std::optional<GrammarSpec>();
  GrammarSpec spec;
  spec.field = "response_format";
  spec.kind = GrammarKind::kJsonObject;
  if (type == "json_object") return std::optional(std::move(spec));
  if (type != "json_schema") {
    return field_error("response_format",
                       "unknown type '" + type + "' (expected text, json_object or json_schema)");
  }
  if (!present(rf, "json_schema")) {
    return field_error("response_format.json_schema", "is required with type json_schema");
  }
  const json& js = rf.at("json_schema");
  if (!js.is_object()) return field_error("response_format.json_schema", "expected an object");
  if (!js.contains("name") || !js["name"].is_string() || js["name"].get<std::string>().empty()) {
    return field_error("response_format.json_schema.name", "is required (a non-empty string)");
  }
  if (present(js, "strict") && !js["strict"].is_boolean()) {
    return field_error("response_format.json_schema.strict", "expected a boolean");
  }
  if (present(js, "description") && !js["description"].is_string()) {
    return field_error("response_format.json_schema.description", "expected a string");
  }
  if (!present(js, "schema")) return std::optional(std::move(spec));  // any JSON object
  const json& schema = js.at("schema");
  if (!schema.is_object()) {
    return field_error("response_format.json_schema.schema", "expected a JSON Schema object");
  }
  spec.kind = GrammarKind::kJsonSchema;
  spec.text = json_fields::dump(schema);
  return std::optional(std::move(spec));
}

struct KindKey {
  const char* key;
  GrammarKind kind;
};
constexpr KindKey kStructuredOutputKeys[] = {
    {"json", GrammarKind::kJsonSchema},        {"regex", GrammarKind::kRegex},
    {"choice", GrammarKind::kChoice},          {"grammar", GrammarKind::kEbnf},
    {"json_object", GrammarKind::kJsonObject},
};
// Top-level fields: vLLM's older names, then llama.cpp's server's (`json_schema` a JSON Schema,
// `grammar` GBNF, which xgrammar's EBNF reads).
constexpr KindKey kTopLevelKeys[] = {
    {"guided_json", GrammarKind::kJsonSchema}, {"guided_regex", GrammarKind::kRegex},
    {"guided_choice", GrammarKind::kChoice},   {"guided_grammar", GrammarKind::kEbnf},
    {"json_schema", GrammarKind::kJsonSchema}, {"grammar", GrammarKind::kEbnf},
};

Result<std::optional<GrammarSpec>> read_structured_outputs(const json& body,
                                                           const RequestLimits& limits) {
  if (!present(body, "structured_outputs")) return std::optional<GrammarSpec>();
  const json& so = body.at("structured_outputs");
  if (!so.is_object()) return field_error("structured_outputs", "expected an object");
  const KindKey* chosen = nullptr;
  int count = 0;
  for (const auto& k : kStructuredOutputKeys) {
    if (present(so, k.key)) chosen = &k, ++count;
  }
  if (count != 1) {
    return field_error("structured_outputs",
                       "give exactly one of json, regex, choice, grammar or json_object (got " +
                           std::to_string(count) + ")");
  }
  LLMSERVE_ASSIGN_OR_RETURN(
      GrammarSpec spec,
      read_grammar_value(so.at(chosen->key), chosen->kind, "structured_outputs",
                         "structured_outputs." + std::string(chosen->key), limits));
  return std::optional(std::move(spec));
}

}  // namespace

Status read_structured_output(const json& body, const RequestLimits& limits,
                              std::optional<GrammarSpec>* out) {
  LLMSERVE_ASSIGN_OR_RETURN(std::optional<GrammarSpec> found, read_response_format(body));
  auto take = [&](std::optional<GrammarSpec> next) -> Status {
    if (!next) return Status::ok();
    if (found) {
      return field_error(next->field, "cannot be combined with " + found->field +
                                          " (give one structured-output field)");
    }
    found = std::move(next);
    return Status::ok();
  };
  LLMSERVE_ASSIGN_OR_RETURN(std::optional<GrammarSpec> so, read_structured_outputs(body, limits));
  LLMSERVE_RETURN_IF_ERROR(take(std::move(so)));
  for (const auto& k : kTopLevelKeys) {
    if (!present(body, k.key)) continue;
    LLMSERVE_ASSIGN_OR_RETURN(GrammarSpec spec,
                              read_grammar_value(body.at(k.key), k.kind, k.key, k.key, limits));
    LLMSERVE_RETURN_IF_ERROR(take(std::move(spec)));
  }
  *out = std::move(found);
  return Status::ok();
}

void keep_schema_order(const nlohmann::ordered_json& body, GrammarSpec* spec) {
  using ojson = nlohmann::ordered_json;
  if (spec == nullptr || spec->kind != GrammarKind::kJsonSchema || !body.is_object()) return;
  const ojson* v = nullptr;
  auto at = [](const ojson* o, const char* key) -> const ojson* {
    if (o == nullptr || !o->is_object() || !o->contains(key)) return nullptr;
    return &(*o)[key];
  };
  if (spec->field == "response_format") {
    v = at(at(at(&body, "response_format"), "json_schema"), "schema");
  } else if (spec->field == "structured_outputs") {
    v = at(at(&body, "structured_outputs"), "json");
  } else {
    v = at(&body, spec->field.c_str());
  }
  if (v != nullptr && v->is_object()) {
    spec->text = v->dump(-1, ' ', false, ojson::error_handler_t::replace);
  }
}

}  // namespace llmserve
