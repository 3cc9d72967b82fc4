#include "server/anthropic/anthropic_error.h"

namespace llmserve {

AnthropicError anthropic_error(const HttpError& e) {
  AnthropicError a;
  a.status = e.status;
  a.message = e.message;
  a.retry_after_seconds = e.retry_after_seconds;
  switch (e.status) {
    case 400:
    case 405:
    case 409:
    case 431:
    case 499:
      a.type = "invalid_request_error";
      break;
    case 401:
      a.type = "authentication_error";
      break;
    case 403:
      a.type = "permission_error";
      break;
    case 404:
      a.type = "not_found_error";
      break;
    case 413:
      a.type = "request_too_large";
      break;
    case 429:
      a.type = "rate_limit_error";
      break;
    case 503:
    case 529:
      a.status = 529;
      a.type = "overloaded_error";
      break;
    case 504:
      a.type = "timeout_error";
      break;
    default:
      a.type = e.status < 500 ? "invalid_request_error" : "api_error";
      break;
  }
  return a;
}

nlohmann::ordered_json anthropic_error_json(const AnthropicError& e) {
  return {{"type", "error"}, {"error", {{"type", e.type}, {"message", e.message}}}};
}

void send_anthropic_error(httplib::Response& res, const HttpError& e) {
  const AnthropicError a = anthropic_error(e);
  res.status = a.status;
  if (a.retry_after_seconds > 0) {
    res.set_header("Retry-After", std::to_string(a.retry_after_seconds));
  }
  res.set_content(anthropic_error_json(a).dump(-1, ' ', false,
                                               nlohmann::ordered_json::error_handler_t::replace),
                  "application/json");
}

}  // namespace llmserve
