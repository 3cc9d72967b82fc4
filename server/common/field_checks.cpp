#include "server/common/field_checks.h"

#include <cmath>
#include <cstdio>

namespace llmserve {

Status field_error(std::string_view field, std::string_view message) {
  std::string m(field);
  m += ": ";
  m += message;
  return invalid_argument(std::move(m));
}

std::string format_number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", value);
  return buf;
}

Status check_int_range(std::string_view field, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return Status::ok();
  return field_error(field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got " + std::to_string(value));
}

Status check_number_range(std::string_view field, double value, double lo, double hi, bool lo_open,
                          bool hi_open) {
  const bool inside = std::isfinite(value) && (lo_open ? value > lo : value >= lo) &&
                      (hi_open ? value < hi : value <= hi);
  if (inside) return Status::ok();
  return field_error(field, std::string("must be in ") + (lo_open ? "(" : "[") + format_number(lo) +
                                ", " + format_number(hi) + (hi_open ? ")" : "]") + ", got " +
                                format_number(value));
}

Status check_model_name(const std::string& requested, const std::string& served) {
  if (requested.empty() || served.empty() || requested == served) return Status::ok();
  return not_found("model: the model '" + requested + "' does not exist; this server serves '" +
                   served + "'");
}

}  // namespace llmserve
