// Another API served on the HTTP port beside the OpenAI routes (server/anthropic is one): its
// routes, and how every answer under its paths is shaped, the server's own ones included
// (401 from the API-key check, 404, 413, 503 before the model is loaded). The transport knows
// nothing of the API; serve_command hands it over before start().
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <httplib.h>

#include "server/http/http_error.h"

namespace llmserve {

struct HttpContext;

struct HttpApi {
  std::string path_prefix;  // requests whose path starts with it are this API's
  std::function<void(httplib::Server&, HttpContext&)> add_routes;
  // The error body in the API's shape; empty: OpenAI's.
  std::function<void(httplib::Response&, const HttpError&)> send_error;
  // Another header that carries an API key as it is ("x-api-key"), beside Authorization:
  // Bearer; "" = none.
  std::string api_key_header;

  bool owns(const std::string& path) const {
    return !path_prefix.empty() && path.rfind(path_prefix, 0) == 0;
  }
};

}  // namespace llmserve
