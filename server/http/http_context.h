// What every HTTP route handler shares, and small response helpers. Internal to server/http.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/common/api_keys.h"
#include "server/common/request_limits.h"
#include "server/common/server_state.h"
#include "server/http/chat_request.h"
#include "server/http/http_api.h"
#include "server/http/http_error.h"
#include "server/metrics/server_metrics.h"

namespace llmserve {

struct HttpContext {
  ServerState& state;
  ServerMetrics& metrics;
  ApiKeys keys;
  ChatRenderer chat_renderer;
  std::vector<HttpApi> apis;  // served beside the OpenAI routes (http_api.h)

  RequestLimits limits() const;
  // The API that owns `path`, or null (OpenAI's routes and shapes).
  const HttpApi* api_for(const std::string& path) const;
  // An error in the shape of the API that owns `path`.
  void send_error_for(const std::string& path, httplib::Response& res, const HttpError& e) const;
  // Authorization: Bearer <key>, or the owning API's own key header.
  bool authorized(const httplib::Request& req) const;
};

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_error(httplib::Response& res, const HttpError& e);
inline void send_status_error(httplib::Response& res, const Status& s, int retry_after) {
  send_error(res, http_error_from_status(s, retry_after));
}

// The request's deadline from the body's `timeout`, else the X-Request-Timeout header (seconds),
// else the server default. Bad header values are INVALID_ARGUMENT.
Result<std::optional<std::chrono::steady_clock::time_point>> request_deadline(
    const httplib::Request& req, std::optional<double> body_timeout, double default_seconds);

// The id the pre-routing handler put in the X-Request-Id response header.
std::string request_id_of(const httplib::Response& res);

void register_generation_routes(httplib::Server& server, HttpContext& ctx);
void register_info_routes(httplib::Server& server, HttpContext& ctx);
void register_render_routes(httplib::Server& server, HttpContext& ctx);
void register_cache_routes(httplib::Server& server, HttpContext& ctx);

}  // namespace llmserve
