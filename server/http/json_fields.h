// Typed, range-checked reads of optional JSON fields. A missing field or null leaves the output
// untouched; a wrong type or range gives INVALID_ARGUMENT whose message starts "<field>: ".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "server/common/bounded_json.h"
#include "server/common/field_checks.h"

namespace llmserve::json_fields {

using nlohmann::json;

// INVALID_ARGUMENT "<field>: <message>" (http_error extracts the field as OpenAI's `param`).
using ::llmserve::field_error;

// Whether `body` has `key` with a non-null value.
bool present(const json& body, const char* key);

// The integer a JSON number holds: an integer, or a float with no fractional part (8.0: JSON
// Schema's `integer` includes it, and clients that compute counts in floating point send it).
// Every integer field reads through this. "<field>: expected an integer, got ..." for a
// fractional or non-numeric value, "<field>: must be a 64-bit integer, got ..." beyond int64.
Result<int64_t> integer_value(const json& v, std::string_view field);

Status read_bool(const json& body, const char* key, bool* out);
Status read_int(const json& body, const char* key, int64_t lo, int64_t hi, int64_t* out);
Status read_int32(const json& body, const char* key, int32_t lo, int32_t hi, int32_t* out);
// Numbers (integer or float). lo_open / hi_open exclude the bound.
Status read_number(const json& body, const char* key, double lo, double hi, double* out,
                   bool lo_open = false, bool hi_open = false);
Status read_float(const json& body, const char* key, double lo, double hi, float* out,
                  bool lo_open = false, bool hi_open = false);
Status read_string(const json& body, const char* key, std::string* out);
// Type-checked reads without a range (server/common validates ranges): any 32-bit integer, any
// number (a float beyond its range reads as infinity, which validation rejects).
Status read_int32_value(const json& body, const char* key, int32_t* out);
Status read_float_value(const json& body, const char* key, float* out);
Status read_double_value(const json& body, const char* key, double* out);

// Parses `text` as a JSON object within `bounds` (server/common/bounded_json.h: nothing is built
// for text too deep or too big); malformed JSON, a non-object or text past a bound is
// INVALID_ARGUMENT "request body ...".
Result<json> parse_object(std::string_view text, const JsonBounds& bounds);

// Serializes with invalid UTF-8 replaced by U+FFFD (never throws).
std::string dump(const json& j);

}  // namespace llmserve::json_fields
