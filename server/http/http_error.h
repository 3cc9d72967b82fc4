// The one mapping from Status to an HTTP error response in OpenAI's shape:
//   {"error": {"message": ..., "type": ..., "param": ... | null, "code": ... | null}}
#pragma once

#include <string>

#include "engine/core/status.h"

namespace llmserve {

struct HttpError {
  int status = 500;
  std::string message;
  std::string type;             // "invalid_request_error", "authentication_error", ...
  std::string param;            // "" -> null
  std::string code;             // "" -> null
  int retry_after_seconds = 0;  // > 0: send Retry-After
};

// INVALID_ARGUMENT -> 400 (param taken from a "<field>: " message prefix; "model" ->
// code model_not_found), OUT_OF_RANGE -> 400 context_length_exceeded, NOT_FOUND -> 404,
// ALREADY_EXISTS -> 409 duplicate_request_id (param from the prefix), UNIMPLEMENTED -> 400,
// RESOURCE_EXHAUSTED -> 429 + Retry-After, UNAVAILABLE -> 503 + Retry-After, DEADLINE_EXCEEDED ->
// 504, CANCELLED -> 499, others -> 500.
HttpError http_error_from_status(const Status& status, int retry_after_seconds = 1);

// A request turned away at admission (429 queue full or too many concurrent requests, 503
// draining or not ready): http_error_from_status with the code set to `reason`, the label the
// llmserve_requests_rejected_total metric counts it under ("queue_full", "too_many_concurrent",
// "draining", "not_ready").
HttpError admission_error(const Status& status, const std::string& reason, int retry_after_seconds);

HttpError unauthorized_error();                      // 401 invalid_api_key
HttpError not_found_error(const std::string& what);  // 404
HttpError payload_too_large_error(size_t limit);     // 413

// The JSON body text.
std::string error_body(const HttpError& e);

// "<field>: message" -> "field"; "" when the message has no such prefix.
std::string param_from_message(const std::string& message);

}  // namespace llmserve
