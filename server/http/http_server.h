// The OpenAI-compatible HTTP server: cpp-httplib's routing and response writing behind our own
// connection handling (server/http/connection_guard.h): a guard thread receives each request
// whole, workers serve them (a separate small pool for /health, /ready and /metrics, so probes
// answer while every worker streams). Routes, auth, CORS, body limit, request ids, per-route
// counters. start() binds and serves on background threads; stop() ends them.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/status.h"
#include "server/common/server_state.h"
#include "server/http/chat_request.h"
#include "server/http/http_api.h"
#include "server/metrics/server_metrics.h"

struct ssl_ctx_st;

namespace llmserve {

struct HttpContext;
struct HttpConnection;
class ConnectionGuard;
class GuardedServer;
class WorkerPool;

class HttpServer {
 public:
  // `state` and `metrics` must outlive the server. `chat_renderer` may be empty.
  HttpServer(ServerState& state, ServerMetrics& metrics, ChatRenderer chat_renderer);
  ~HttpServer();

  // Serves another API beside the OpenAI routes (before start()).
  void add_api(HttpApi api);

  // Binds host:port (port 0 = any free port) and starts serving. TLS when options say so.
  Status start();
  int port() const { return port_; }
  // Stops accepting, closes connections (streams in flight end), joins the thread.
  void stop();

 private:
  void configure();
  void on_request_ready(std::shared_ptr<HttpConnection> conn);
  void serve(std::shared_ptr<HttpConnection> conn);
  // Answers a request the guard turned away (framing error, timeout, busy), then closes.
  void answer_and_close(std::shared_ptr<HttpConnection> conn, int status,
                        const std::string& message);

  ServerState& state_;
  std::unique_ptr<HttpContext> ctx_;
  ssl_ctx_st* ssl_ctx_ = nullptr;
  std::unique_ptr<GuardedServer> server_;
  std::unique_ptr<ConnectionGuard> guard_;
  std::unique_ptr<WorkerPool> workers_;  // every other request
  std::unique_ptr<WorkerPool> control_;  // /health, /ready, /metrics and the guard's answers
  std::mutex serving_mu_;
  std::set<int> serving_fds_;  // connections a worker is serving now
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;  // the listening socket, once bound
};

// The routes counted under their own path (each exists at 0 with code 200 from start-up).
const std::vector<std::string>& http_routes();
// The metric label for a request path: a known route, "/v1/requests/{id}", or "other".
std::string http_route_label(const std::string& method, const std::string& path);

}  // namespace llmserve
