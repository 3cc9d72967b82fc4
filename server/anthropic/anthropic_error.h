// Errors in Anthropic's envelope: {"type": "error", "error": {"type", "message"}}, from the one
// Status -> HttpError mapping (server/http/http_error.h), with Anthropic's types and codes:
//   400 invalid_request_error (409 duplicate request id too), 401 authentication_error,
//   403 permission_error, 404 not_found_error, 413 request_too_large, 429 rate_limit_error
//   (Retry-After kept), 500 api_error, 503 (draining, not ready) -> 529 overloaded_error,
//   504 timeout_error, 499 (client went away; nobody reads it) invalid_request_error.
#pragma once

#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/http/http_error.h"

namespace llmserve {

struct AnthropicError {
  int status = 500;
  std::string type;
  std::string message;
  int retry_after_seconds = 0;
};

AnthropicError anthropic_error(const HttpError& e);
nlohmann::ordered_json anthropic_error_json(const AnthropicError& e);
void send_anthropic_error(httplib::Response& res, const HttpError& e);

}  // namespace llmserve
