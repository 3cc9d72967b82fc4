#include "server/http/http_error.h"

#include <nlohmann/json.hpp>

#include "server/http/json_fields.h"

namespace llmserve {

std::string param_from_message(const std::string& message) {
  const auto colon = message.find(": ");
  if (colon == std::string::npos || colon == 0 || colon > 64) return "";
  for (size_t i = 0; i < colon; ++i) {
    const char c = message[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '[' || c == ']' || c == '-';
    if (!ok) return "";
  }
  return message.substr(0, colon);
}

HttpError http_error_from_status(const Status& status, int retry_after_seconds) {
  HttpError e;
  e.message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      e.status = 400;
      e.type = "invalid_request_error";
      e.param = param_from_message(status.message());
      e.code = "invalid_value";
      if (status.message().rfind("request body", 0) == 0) e.code = "invalid_json";
      break;
    case StatusCode::kOutOfRange:
      e.status = 400;
      e.type = "invalid_request_error";
      e.code = "context_length_exceeded";
      e.param = param_from_message(status.message());
      if (e.param.empty()) e.param = "messages";
      break;
    case StatusCode::kNotFound:
      e.status = 404;
      e.type = "invalid_request_error";
      e.param = param_from_message(status.message());
      e.code = e.param == "model" ? "model_not_found" : "not_found";
      break;
    case StatusCode::kAlreadyExists:
      e.status = 409;
      e.type = "invalid_request_error";
      e.param = param_from_message(status.message());
      e.code = "duplicate_request_id";
      break;
    case StatusCode::kUnimplemented:
      e.status = 400;
      e.type = "invalid_request_error";
      e.code = "unsupported";
      break;
    case StatusCode::kResourceExhausted:
      e.status = 429;
      e.type = "rate_limit_error";
      e.code = "queue_full";
      e.retry_after_seconds = retry_after_seconds;
      break;
    case StatusCode::kUnavailable:
      e.status = 503;
      e.type = "service_unavailable_error";
      e.code = "service_unavailable";
      e.retry_after_seconds = retry_after_seconds;
      break;
    case StatusCode::kDeadlineExceeded:
      e.status = 504;
      e.type = "timeout_error";
      e.code = "timeout";
      break;
    case StatusCode::kCancelled:
      e.status = 499;
      e.type = "cancelled_error";
      e.code = "cancelled";
      break;
    default:
      e.status = 500;
      e.type = "server_error";
      e.code = "internal_error";
      break;
  }
  if (e.message.empty()) e.message = status_code_name(status.code());
  return e;
}

HttpError admission_error(const Status& status, const std::string& reason,
                          int retry_after_seconds) {
  HttpError e = http_error_from_status(status, retry_after_seconds);
  if (!reason.empty()) e.code = reason;
  return e;
}

HttpError unauthorized_error() {
  return HttpError{401,
                   "Incorrect or missing API key. Send 'Authorization: Bearer <key>'.",
                   "invalid_request_error",
                   "",
                   "invalid_api_key",
                   0};
}

HttpError not_found_error(const std::string& what) {
  return HttpError{404, what, "invalid_request_error", "", "not_found", 0};
}

HttpError payload_too_large_error(size_t limit) {
  return HttpError{413,
                   "Request body is larger than the limit of " + std::to_string(limit) + " bytes.",
                   "invalid_request_error",
                   "",
                   "request_too_large",
                   0};
}

std::string error_body(const HttpError& e) {
  nlohmann::json err = {{"message", e.message},
                        {"type", e.type},
                        {"param", e.param.empty() ? nlohmann::json() : nlohmann::json(e.param)},
                        {"code", e.code.empty() ? nlohmann::json() : nlohmann::json(e.code)}};
  return json_fields::dump(nlohmann::json{{"error", std::move(err)}});
}

}  // namespace llmserve
