#include "server/http/http_context.h"

#include <cmath>
#include <cstdlib>

#include "server/http/json_fields.h"

namespace llmserve {

RequestLimits HttpContext::limits() const {
  RequestLimits l;
  Engine* e = state.engine();
  if (e != nullptr) {
    l.vocab_size = e->tokenizer().vocab_size();
    l.max_model_len = e->max_model_len();
    l.max_logprobs = e->options().max_logprobs;
  }
  l.model_name = state.model_name();
  l.max_prompt_logprob_entries = state.options().max_prompt_logprob_entries;
  l.default_sampling = state.options().default_sampling;
  l.json_bounds = state.options().json_bounds;
  l.max_images_per_request = state.options().max_images_per_request;
  return l;
}

const HttpApi* HttpContext::api_for(const std::string& path) const {
  for (const HttpApi& a : apis) {
    if (a.owns(path)) return &a;
  }
  return nullptr;
}

void HttpContext::send_error_for(const std::string& path, httplib::Response& res,
                                 const HttpError& e) const {
  const HttpApi* api = api_for(path);
  if (api != nullptr && api->send_error) return api->send_error(res, e);
  send_error(res, e);
}

bool HttpContext::authorized(const httplib::Request& req) const {
  if (keys.authorize(req.get_header_value("Authorization"))) return true;
  const HttpApi* api = api_for(req.path);
  if (api == nullptr || api->api_key_header.empty() || !req.has_header(api->api_key_header)) {
    return false;
  }
  return keys.authorize("Bearer " + req.get_header_value(api->api_key_header));
}

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(json_fields::dump(body), "application/json");
}

void send_error(httplib::Response& res, const HttpError& e) {
  res.status = e.status;
  if (e.retry_after_seconds > 0)
    res.set_header("Retry-After", std::to_string(e.retry_after_seconds));
  res.set_content(error_body(e), "application/json");
}

Result<std::optional<std::chrono::steady_clock::time_point>> request_deadline(
    const httplib::Request& req, std::optional<double> body_timeout, double default_seconds) {
  double seconds = default_seconds;
  if (body_timeout) {
    seconds = *body_timeout;
  } else if (req.has_header("X-Request-Timeout")) {
    const std::string v = req.get_header_value("X-Request-Timeout");
    char* end = nullptr;
    const double t = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(t) || t <= 0 || t > 86400) {
      return json_fields::field_error("X-Request-Timeout",
                                      "must be a number of seconds in (0, 86400], got '" + v + "'");
    }
    seconds = t;
  }
  if (seconds <= 0) return std::optional<std::chrono::steady_clock::time_point>();
  return std::optional<std::chrono::steady_clock::time_point>(
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(seconds)));
}

std::string request_id_of(const httplib::Response& res) {
  return res.get_header_value("X-Request-Id");
}

}  // namespace llmserve
