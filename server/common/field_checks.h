// Request-field errors in the one convention every transport shares: INVALID_ARGUMENT whose
// message starts "<field>: " (HTTP turns the prefix into OpenAI's `param`; gRPC sends it as is).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace llmserve {

// INVALID_ARGUMENT "<field>: <message>".
Status field_error(std::string_view field, std::string_view message);

// `value` within [lo, hi], else "<field>: must be in [lo, hi], got <value>".
Status check_int_range(std::string_view field, int64_t value, int64_t lo, int64_t hi);
// Finite and within the bounds; lo_open / hi_open exclude the bound.
Status check_number_range(std::string_view field, double value, double lo, double hi,
                          bool lo_open = false, bool hi_open = false);

// A request's `model` ("" = the served one) against the served model's name ("" = any):
// NOT_FOUND "model: the model '<x>' does not exist; this server serves '<name>'".
Status check_model_name(const std::string& requested, const std::string& served);

// Shortest readable form of a number for messages ("0.5", "2", "1e-09").
std::string format_number(double value);

}  // namespace llmserve
