// The OpenAI-compatible HTTP server (cpp-httplib): routes, auth, CORS, body limit, request ids,
// per-route counters. start() binds and serves on a background thread; stop() ends it.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/status.h"
#include "server/common/server_state.h"
#include "server/http/chat_request.h"
#include "server/metrics/server_metrics.h"

namespace httplib {
class Server;
}

namespace llmserve {

struct HttpContext;

class HttpServer {
 public:
  // `state` and `metrics` must outlive the server. `chat_renderer` may be empty.
  HttpServer(ServerState& state, ServerMetrics& metrics, ChatRenderer chat_renderer);
  ~HttpServer();

  // Binds host:port (port 0 = any free port) and starts serving. TLS when options say so.
  Status start();
  int port() const { return port_; }
  // Stops accepting, closes connections (streams in flight end), joins the thread.
  void stop();

 private:
  void configure();

  ServerState& state_;
  std::unique_ptr<HttpContext> ctx_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;  // the listening socket, once bound
};

// The routes counted under their own path (each exists at 0 with code 200 from start-up).
const std::vector<std::string>& http_routes();
// The metric label for a request path: a known route, "/v1/requests/{id}", or "other".
std::string http_route_label(const std::string& method, const std::string& path);

}  // namespace llmserve
