#include "server/http/json_fields.h"

#include <cmath>
#include <limits>

namespace llmserve::json_fields {

namespace {

std::string fmt_double(double v) {
  std::string s = std::to_string(v);
  while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) {
    const bool dot = s.back() == '.';
    s.pop_back();
    if (dot) break;
  }
  return s;
}

std::string type_name(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

}  // namespace

bool present(const json& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

Status read_bool(const json& body, const char* key, bool* out) {
  if (!present(body, key)) return Status::ok();
  const json& v = body.at(key);
  if (!v.is_boolean()) return field_error(key, "expected a boolean, got " + type_name(v));
  *out = v.get<bool>();
  return Status::ok();
}

Result<int64_t> integer_value(const json& v, std::string_view field) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return field_error(field, "must be a 64-bit integer, got " + std::to_string(u));
    }
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!v.is_number_float()) return field_error(field, "expected an integer, got " + type_name(v));
  const double x = v.get<double>();
  if (!std::isfinite(x) || std::trunc(x) != x) {
    return field_error(field, "expected an integer, got " + v.dump());
  }
  // Only where every integer is an exact double (|x| <= 2^53): past it a float stands for an
  // integer the client did not write (-2^63 - 1 parses as -2^63).
  constexpr double kTwo53 = 9007199254740992.0;
  if (x < -kTwo53 || x > kTwo53) {
    return field_error(field,
                       "must be an integer written without a fraction or exponent past "
                       "2^53, got " +
                           v.dump());
  }
  return static_cast<int64_t>(x);
}

Status read_int(const json& body, const char* key, int64_t lo, int64_t hi, int64_t* out) {
  if (!present(body, key)) return Status::ok();
  const json& v = body.at(key);
  const std::string range = " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!v.is_number()) {
    return field_error(key, "expected an integer" + range + ", got " + type_name(v));
  }
  auto x = integer_value(v, key);
  const bool fractional = v.is_number_float() && std::trunc(v.get<double>()) != v.get<double>();
  if (!x.is_ok() && fractional) {
    return field_error(key, "expected an integer" + range + ", got " + v.dump());
  }
  if (!x.is_ok() || *x < lo || *x > hi) {
    return field_error(key, "must be" + range + ", got " + v.dump());
  }
  *out = *x;
  return Status::ok();
}

Status read_int32(const json& body, const char* key, int32_t lo, int32_t hi, int32_t* out) {
  int64_t x = *out;
  LLMSERVE_RETURN_IF_ERROR(read_int(body, key, lo, hi, &x));
  *out = static_cast<int32_t>(x);
  return Status::ok();
}

Status read_number(const json& body, const char* key, double lo, double hi, double* out,
                   bool lo_open, bool hi_open) {
  if (!present(body, key)) return Status::ok();
  const json& v = body.at(key);
  const std::string range = std::string(lo_open ? " in (" : " in [") + fmt_double(lo) + ", " +
                            fmt_double(hi) + (hi_open ? ")" : "]");
  if (!v.is_number())
    return field_error(key, "expected a number" + range + ", got " + type_name(v));
  const double x = v.get<double>();
  const bool bad =
      !std::isfinite(x) || (lo_open ? x <= lo : x < lo) || (hi_open ? x >= hi : x > hi);
  if (bad) return field_error(key, "must be" + range + ", got " + v.dump());
  *out = x;
  return Status::ok();
}

Status read_float(const json& body, const char* key, double lo, double hi, float* out, bool lo_open,
                  bool hi_open) {
  double x = *out;
  LLMSERVE_RETURN_IF_ERROR(read_number(body, key, lo, hi, &x, lo_open, hi_open));
  *out = static_cast<float>(x);
  return Status::ok();
}

Status read_string(const json& body, const char* key, std::string* out) {
  if (!present(body, key)) return Status::ok();
  const json& v = body.at(key);
  if (!v.is_string()) return field_error(key, "expected a string, got " + type_name(v));
  *out = v.get<std::string>();
  return Status::ok();
}

Status read_int32_value(const json& body, const char* key, int32_t* out) {
  if (!present(body, key)) return Status::ok();
  const json& v = body.at(key);
  LLMSERVE_ASSIGN_OR_RETURN(const int64_t x, integer_value(v, key));
  if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
    return field_error(key, "must be a 32-bit integer, got " + v.dump());
  }
  *out = static_cast<int32_t>(x);
  return Status::ok();
}

Status read_double_value(const json& body, const char* key, double* out) {
  if (!present(body, key)) return Status::ok();
  const json& v = body.at(key);
  if (!v.is_number()) return field_error(key, "expected a number, got " + type_name(v));
  *out = v.get<double>();
  return Status::ok();
}

Status read_float_value(const json& body, const char* key, float* out) {
  double x = *out;
  LLMSERVE_RETURN_IF_ERROR(read_double_value(body, key, &x));
  *out = static_cast<float>(x);
  return Status::ok();
}

Result<json> parse_object(std::string_view text, const JsonBounds& bounds) {
  LLMSERVE_ASSIGN_OR_RETURN(json j, parse_bounded_json(text, bounds));
  if (!j.is_object()) {
    return invalid_argument("request body must be a JSON object, got " + type_name(j));
  }
  return j;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace llmserve::json_fields
