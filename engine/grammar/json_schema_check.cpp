#include "engine/grammar/json_schema_check.h"

#include <array>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmserve {
namespace {

using nlohmann::json;

// Keywords xgrammar 0.2.9 parses and then drops, so the output may break them.
constexpr std::array<std::string_view, 9> kIgnoredKeywords = {
    "not",          "if",       "then",       "else", "dependentRequired", "dependentSchemas",
    "dependencies", "contains", "maxContains"};

// The `format` values xgrammar 0.2.9 turns into a pattern; any other is ignored.
constexpr std::array<std::string_view, 14> kBuiltinFormats = {
    "email",         "date",
    "time",          "date-time",
    "duration",      "ipv4",
    "ipv6",          "hostname",
    "uuid",          "uri",
    "uri-reference", "uri-template",
    "json-pointer",  "relative-json-pointer"};

// Keywords whose value is one subschema, a map of them, or an array of them.
constexpr std::array<std::string_view, 9> kSchemaKeywords = {"additionalProperties",
                                                             "unevaluatedProperties",
                                                             "unevaluatedItems",
                                                             "propertyNames",
                                                             "not",
                                                             "if",
                                                             "then",
                                                             "else",
                                                             "contains"};
constexpr std::array<std::string_view, 5> kSchemaMapKeywords = {
    "properties", "patternProperties", "$defs", "definitions", "dependentSchemas"};
constexpr std::array<std::string_view, 4> kSchemaArrayKeywords = {"prefixItems", "anyOf", "oneOf",
                                                                  "allOf"};

bool contains(auto const& list, std::string_view s) {
  for (std::string_view x : list) {
    if (x == s) return true;
  }
  return false;
}

std::string pointer_token(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

class Checker {
 public:
  explicit Checker(const SchemaLimits& limits) : limits_(limits) {}

  // Iterative: a schema may nest as deep as the configured limit, past any thread's stack.
  Status visit(const json& root) {
    struct Item {
      const json* schema;
      std::string path;
      int32_t depth;
    };
    std::vector<Item> todo = {{&root, "", 0}};
    while (!todo.empty()) {
      Item item = std::move(todo.back());
      todo.pop_back();
      const json& schema = *item.schema;
      if (!schema.is_object()) continue;  // booleans; xgrammar reports other types
      if (item.depth > limits_.max_depth) {
        return invalid_argument(
            "the schema nests deeper than " + std::to_string(limits_.max_depth) + " levels (at " +
            where(item.path) + "); engine.grammar_max_schema_depth sets the limit");
      }
      if (++nodes_ > limits_.max_nodes) {
        return invalid_argument("the schema has more than " + std::to_string(limits_.max_nodes) +
                                " subschemas; engine.grammar_max_schema_nodes sets the limit");
      }
      LLMSERVE_RETURN_IF_ERROR(check_keywords(schema, item.path));
      const int32_t next = item.depth + 1;
      // Pushed in reverse, so the first keyword's subschemas are checked first.
      std::vector<Item> children;
      for (const auto& [key, value] : schema.items()) {
        const std::string here = item.path + "/" + pointer_token(key);
        if (contains(kSchemaKeywords, key)) {
          children.push_back({&value, here, next});
        } else if (contains(kSchemaMapKeywords, key) && value.is_object()) {
          for (const auto& [name, sub] : value.items()) {
            children.push_back({&sub, here + "/" + pointer_token(name), next});
          }
        } else if ((contains(kSchemaArrayKeywords, key) || key == "items") && value.is_array()) {
          for (size_t i = 0; i < value.size(); ++i) {
            children.push_back({&value[i], here + "/" + std::to_string(i), next});
          }
        } else if (key == "items") {
          children.push_back({&value, here, next});
        }
      }
      for (auto it = children.rbegin(); it != children.rend(); ++it) todo.push_back(std::move(*it));
    }
    return Status::ok();
  }

 private:
  static std::string where(const std::string& path) { return path.empty() ? "the root" : path; }

  static Status unsupported(std::string_view keyword, const std::string& path,
                            std::string_view why) {
    return invalid_argument(std::string(keyword) + " (at " + where(path) +
                            ") is not supported: " + std::string(why));
  }

  static Status check_keywords(const json& schema, const std::string& path) {
    for (std::string_view k : kIgnoredKeywords) {
      if (schema.contains(k)) {
        return unsupported(k, path, "structured outputs cannot enforce it");
      }
    }
    if (auto it = schema.find("uniqueItems"); it != schema.end() && *it != json(false)) {
      return unsupported("uniqueItems", path, "structured outputs cannot enforce it");
    }
    const bool has_length = schema.contains("minLength") || schema.contains("maxLength");
    if (auto it = schema.find("format"); it != schema.end() && it->is_string()) {
      const std::string format = it->get<std::string>();
      if (!contains(kBuiltinFormats, format)) {
        return unsupported("format", path,
                           "the format \"" + format +
                               "\" is not one structured outputs can enforce (email, date, time, "
                               "date-time, duration, ipv4, ipv6, hostname, uuid, uri, "
                               "uri-reference, uri-template, json-pointer, "
                               "relative-json-pointer)");
      }
      if (has_length && !schema.contains("pattern")) {
        return unsupported("format", path, "a format cannot be combined with minLength/maxLength");
      }
    }
    if (schema.contains("pattern") && has_length) {
      return unsupported("pattern", path,
                         "a pattern cannot be combined with minLength/maxLength; put the length "
                         "in the pattern");
    }
    if (auto it = schema.find("$ref"); it != schema.end() && it->is_string()) {
      const std::string ref = it->get<std::string>();
      if (ref != "#" && !ref.starts_with("#/")) {
        return unsupported(
            "$ref", path,
            "only references inside the schema (\"#/...\") can be resolved, not \"" + ref + "\"");
      }
    }
    if (auto it = schema.find("allOf"); it != schema.end() && it->is_array() && it->size() > 1) {
      return unsupported("allOf", path,
                         "allOf with more than one schema cannot be enforced; merge them into one");
    }
    return Status::ok();
  }

  const SchemaLimits& limits_;
  int32_t nodes_ = 0;
};

}  // namespace

Status check_json_schema(const std::string& schema_text, const SchemaLimits& limits) {
  // The parser's own recursion is bounded: nesting past the limit fails here, before parsing
  // a document deep enough to exhaust the stack.
  int32_t depth = 0;
  int32_t deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < schema_text.size(); ++i) {
    const char c = schema_text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') deepest = std::max(deepest, ++depth);
    if (c == '}' || c == ']') --depth;
  }
  // Each schema level is at most a few JSON levels ({"items": {...}} is one; a property is two).
  const int32_t json_depth_limit = 4 * limits.max_depth + 8;
  if (deepest > json_depth_limit) {
    return invalid_argument("the schema nests deeper than " + std::to_string(limits.max_depth) +
                            " levels; engine.grammar_max_schema_depth sets the limit");
  }
  const json schema = json::parse(schema_text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return Status::ok();  // xgrammar names the syntax error
  return Checker(limits).visit(schema);
}

}  // namespace llmserve
