#include "server/http/http_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <random>

#include <sys/socket.h>

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include "server/common/heap_release.h"
#include "server/http/connection_guard.h"
#include "server/http/guarded_server.h"
#include "server/http/http_context.h"
#include "server/http/worker_pool.h"

namespace llmserve {

namespace {

// Kernel send buffer of every HTTP connection (set on the listening socket, inherited by the
// accepted ones; Linux doubles it). Without it the kernel autotunes up to net.ipv4.tcp_wmem's
// maximum (4 MiB; on loopback the first guess is already > 1 MiB), which swallows thousands of
// SSE events of a client that never reads, so the per-stream bound (server.stream_buffer_tokens)
// would never be reached. 64 KiB still fills a 10 MB/s link at 10 ms RTT.
constexpr int kSendBufferBytes = 64 << 10;
// cpp-httplib 0.11 listens with a backlog of 5: a burst of connects overflows it and the dropped
// SYNs are retried after 1 s. The listening socket is re-listened with this backlog.
constexpr int kListenBacklog = 1024;
// Requests served on one kept-alive connection before it is closed.
constexpr int kMaxRequestsPerConnection = 1000;
constexpr auto kWriteTimeout = std::chrono::seconds(30);
constexpr auto kErrorWriteTimeout = std::chrono::seconds(2);
constexpr int kControlThreads = 2;

// Probes and scrapes run on their own workers: they answer while every other worker streams.
bool is_control_request(const RequestHead& head) {
  const std::string path = head.path();
  return head.method == "GET" && (path == "/health" || path == "/ready" || path == "/metrics");
}

// Routes that read a JSON body: without a length they get 411.
bool requires_body(const RequestHead& head) {
  const std::string path = head.path();
  return head.method == "POST" &&
         (path == "/v1/completions" || path == "/v1/chat/completions" || path == "/tokenize" ||
          path == "/detokenize" || path == "/v1/completions/render" ||
          path == "/v1/chat/completions/render" || path == "/v1/responses");
}

ssl_ctx_st* make_ssl_context(const std::string& cert, const std::string& key, std::string* why) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    *why = "cannot create a TLS context";
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    char buf[256] = {0};
    ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
    ERR_clear_error();
    *why = buf;
    SSL_CTX_free(ctx);
    return nullptr;
  }
  return ctx;
}

std::string status_line_reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

bool is_public_path(const std::string& path) {
  return path == "/health" || path == "/ready";
}

std::string new_request_id(const std::string& prefix) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}() ^
                                   (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull));
  static const char* kHex = "0123456789abcdef";
  std::string id = prefix;
  uint64_t a = rng(), b = rng();
  for (int i = 0; i < 16; ++i) id += kHex[(a >> (i * 4)) & 15];
  for (int i = 0; i < 8; ++i) id += kHex[(b >> (i * 4)) & 15];
  return id;
}

// Client-supplied ids are kept when short and printable, so they can be echoed in headers.
bool acceptable_client_id(const std::string& id) {
  if (id.empty() || id.size() > kMaxClientRequestIdBytes) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == ':';
  });
}

std::string id_prefix(const std::string& path) {
  if (path == "/v1/chat/completions") return "chatcmpl-";
  if (path == "/v1/completions") return "cmpl-";
  return "req-";
}

bool origin_allowed(const std::vector<std::string>& allow, const std::string& origin) {
  for (const auto& a : allow) {
    if (a == "*" || a == origin) return true;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& http_routes() {
  static const std::vector<std::string> routes = {"/v1/completions",
                                                  "/v1/chat/completions",
                                                  "/v1/models",
                                                  "/tokenize",
                                                  "/detokenize",
                                                  "/version",
                                                  "/health",
                                                  "/ready",
                                                  "/metrics",
                                                  "/v1/completions/render",
                                                  "/v1/chat/completions/render",
                                                  "/tokenizer_info",
                                                  "/reset_prefix_cache",
                                                  "/v1/responses",
                                                  "/v1/messages",
                                                  "/v1/messages/count_tokens"};
  return routes;
}

std::string http_route_label(const std::string& method, const std::string& path) {
  for (const std::string& r : http_routes()) {
    if (path == r) return r;
  }
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{model}";
  if (path.rfind("/v1/requests/", 0) == 0) {
    return method == "DELETE" ? "/v1/requests/{id}" : "/v1/requests/{id}/cancel";
  }
  return "other";
}

HttpServer::HttpServer(ServerState& state, ServerMetrics& metrics, ChatRenderer chat_renderer)
    : state_(state),
      ctx_(new HttpContext{
          state, metrics, ApiKeys(state.options().api_keys), std::move(chat_renderer), {}}) {
  for (const std::string& route : http_routes()) metrics.declare_http(route, 200);
}

HttpServer::~HttpServer() {
  stop();
  if (ssl_ctx_ != nullptr) SSL_CTX_free(ssl_ctx_);
}

void HttpServer::configure() {
  const ServerOptions& o = state_.options();
  httplib::Server& s = *server_;
  HttpContext& ctx = *ctx_;
  s.set_payload_max_length(o.max_body_bytes);
  // Replaces cpp-httplib's default (SO_REUSEPORT, which let a second daemon bind the same port).
  s.set_socket_options([this](int fd) {
    const int one = 1;
    const int sndbuf = kSendBufferBytes;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    listen_fd_ = fd;
  });

  s.set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
    const ServerOptions& opt = ctx.state.options();
    const std::string client_id = req.get_header_value("X-Request-Id");
    res.set_header("X-Request-Id", acceptable_client_id(client_id)
                                       ? client_id
                                       : new_request_id(id_prefix(req.path)));
    if (!opt.cors_allow_origins.empty() && req.has_header("Origin")) {
      const std::string origin = req.get_header_value("Origin");
      if (origin_allowed(opt.cors_allow_origins, origin)) {
        res.set_header("Access-Control-Allow-Origin", origin);
        res.set_header("Vary", "Origin");
        if (req.method == "OPTIONS") {
          res.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
          res.set_header("Access-Control-Allow-Headers",
                         "Authorization, Content-Type, X-Request-Id, X-Request-Timeout, "
                         "x-api-key, anthropic-version, anthropic-beta");
          res.set_header("Access-Control-Max-Age", "600");
          res.status = 204;
          return httplib::Server::HandlerResponse::Handled;
        }
      }
    }
    const bool needs_key =
        !is_public_path(req.path) && !(req.path == "/metrics" && !opt.metrics_require_auth);
    if (needs_key && !ctx.authorized(req)) {
      ctx.send_error_for(req.path, res, unauthorized_error());
      return httplib::Server::HandlerResponse::Handled;
    }
    const bool needs_engine =
        !is_public_path(req.path) && req.path != "/metrics" && req.path != "/version";
    if (needs_engine && ctx.state.engine() == nullptr) {
      ctx.send_error_for(req.path, res,
                         http_error_from_status(unavailable("the model is not loaded yet"),
                                                opt.retry_after_seconds));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  s.set_error_handler(httplib::Server::HandlerWithResponse([&ctx](const httplib::Request& req,
                                                                  httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 413) {
      ctx.send_error_for(req.path, res,
                         payload_too_large_error(ctx.state.options().max_body_bytes));
    } else if (res.status == 404) {
      ctx.send_error_for(req.path, res,
                         not_found_error("no route for " + req.method + " " + req.path));
    } else if (res.status == 405) {
      ctx.send_error_for(req.path, res,
                         HttpError{405, "method not allowed", "invalid_request_error", "", "", 0});
    } else {
      HttpError e{
          res.status, "HTTP error " + std::to_string(res.status), "invalid_request_error", "", "",
          0};
      if (res.status >= 500) e.type = "server_error";
      ctx.send_error_for(req.path, res, e);
    }
    return httplib::Server::HandlerResponse::Handled;
  }));

  s.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("HTTP {} {}: unhandled exception: {}", req.method, req.path, what);
        send_error(
            res, HttpError{500, "internal server error", "server_error", "", "internal_error", 0});
      });

  s.set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
    ctx.metrics.count_http(http_route_label(req.method, req.path), res.status);
  });

  register_generation_routes(s, ctx);
  register_info_routes(s, ctx);
  register_render_routes(s, ctx);
  register_cache_routes(s, ctx);
  for (const HttpApi& api : ctx.apis) {
    if (api.add_routes) api.add_routes(s, ctx);
  }
}

void HttpServer::add_api(HttpApi api) {
  ctx_->apis.push_back(std::move(api));
}

Status HttpServer::start() {
  const ServerOptions& o = state_.options();
  // A write to a connection the client closed must fail, not end the process (TLS writes
  // cannot pass MSG_NOSIGNAL).
  std::signal(SIGPIPE, SIG_IGN);
  if (o.tls_enabled()) {
    std::string why;
    ssl_ctx_ = make_ssl_context(o.tls_cert_file, o.tls_key_file, &why);
    if (ssl_ctx_ == nullptr) {
      return invalid_argument("server.tls_cert_file / server.tls_key_file: cannot load '" +
                              o.tls_cert_file + "' / '" + o.tls_key_file + "': " + why);
    }
  }
  GuardOptions g;
  g.limits.max_header_count = o.max_header_count;
  g.limits.max_body_bytes = o.max_body_bytes;
  g.head_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(o.request_head_timeout_seconds * 1000.0));
  g.body_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(o.request_body_timeout_seconds * 1000.0));
  g.keep_alive_timeout = std::chrono::seconds(o.keep_alive_timeout_seconds);
  g.max_pending_connections = o.max_pending_connections;
  g.max_buffered_bytes = std::max<size_t>(256u << 20, 4 * o.max_body_bytes);
  g.ssl_ctx = ssl_ctx_;
  g.requires_body = requires_body;
  guard_ = std::make_unique<ConnectionGuard>(
      g, [this](ConnectionPtr c) { on_request_ready(std::move(c)); },
      [this](ConnectionPtr c, int status, std::string message) {
        std::function<void()> task = [this, c, status, message] {
          answer_and_close(c, status, message);
        };
        control_->try_post(task);
      });
  const int threads = std::max(o.http_threads, 4);
  workers_ = std::make_unique<WorkerPool>(threads, static_cast<size_t>(threads) * 4 + 64);
  control_ = std::make_unique<WorkerPool>(kControlThreads, 4096);
  server_ = std::make_unique<GuardedServer>([this](int fd) { guard_->adopt(fd); });
  configure();
  if (o.http_port == 0) {
    port_ = server_->bind_to_any_port(o.host);
  } else {
    port_ = server_->bind_to_port(o.host, o.http_port) ? o.http_port : -1;
  }
  if (port_ <= 0) {
    return unavailable("cannot bind HTTP on " + o.host + ":" + std::to_string(o.http_port));
  }
  // Linux takes a second listen() on a listening socket as a new backlog.
  if (listen_fd_ >= 0 && ::listen(listen_fd_, kListenBacklog) != 0) {
    spdlog::warn("HTTP: cannot raise the listen backlog to {}", kListenBacklog);
  }
  Status guard = guard_->start();
  if (!guard.is_ok()) return guard;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // cpp-httplib 0.11's stop() only ends a server that is already running (and it has no
  // wait_until_ready): a stop() right after start() left the accept loop blocked for good.
  for (int i = 0; i < 10000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Status::ok();
}

void HttpServer::on_request_ready(std::shared_ptr<HttpConnection> conn) {
  WorkerPool& pool = is_control_request(conn->head) ? *control_ : *workers_;
  std::function<void()> task = [this, conn] { serve(conn); };
  if (!pool.try_post(task)) {
    std::function<void()> busy = [this, conn] {
      answer_and_close(conn, 503, "every HTTP worker is busy and its queue is full; retry later");
    };
    control_->try_post(busy);
  }
}

void HttpServer::serve(std::shared_ptr<HttpConnection> conn) {
  {
    std::lock_guard<std::mutex> lock(serving_mu_);
    if (stopping_) return;
    serving_fds_.insert(conn->fd);
  }
  const bool last = conn->requests_served + 1 >= kMaxRequestsPerConnection;
  bool keep = false;
  {
    const LargeRequestScope large(conn->request.size());
    set_current_http_connection(conn.get());
    ConnectionStream stream(*conn, kWriteTimeout);
    keep = server_->serve(stream, last);
    set_current_http_connection(nullptr);
    // A large body's buffers go now, not when the connection next idles or closes.
    if (conn->request.capacity() >= kLargeRequestBytes) std::string().swap(conn->request);
    conn->request_read = 0;
    if (conn->in.capacity() >= kLargeRequestBytes && conn->in.size() < kLargeRequestBytes / 2) {
      conn->in.shrink_to_fit();
    }
  }
  conn->requests_served++;
  {
    std::lock_guard<std::mutex> lock(serving_mu_);
    serving_fds_.erase(conn->fd);
  }
  if (keep && !stopping_) guard_->resume(std::move(conn));
}

void HttpServer::answer_and_close(std::shared_ptr<HttpConnection> conn, int status,
                                  const std::string& message) {
  HttpError e{status, message, status >= 500 ? "server_error" : "invalid_request_error", "", "", 0};
  if (status == 413) e = payload_too_large_error(state_.options().max_body_bytes);
  if (status == 503) e.retry_after_seconds = state_.options().retry_after_seconds;
  const std::string body = error_body(e);
  std::string response =
      "HTTP/1.1 " + std::to_string(status) + " " + status_line_reason(status) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n";
  if (e.retry_after_seconds > 0) {
    response += "Retry-After: " + std::to_string(e.retry_after_seconds) + "\r\n";
  }
  response += "\r\n" + body;
  write_fully(*conn, response, kErrorWriteTimeout);
  const RequestHead& head = conn->head;
  ctx_->metrics.count_http(
      head.method.empty() ? "other" : http_route_label(head.method, head.path()), status);
}

void HttpServer::stop() {
  stopping_ = true;
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  if (guard_) guard_->stop();
  {
    // Streams and waits in flight see their connection end.
    std::lock_guard<std::mutex> lock(serving_mu_);
    for (int fd : serving_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  if (workers_) workers_->shutdown();
  if (control_) control_->shutdown();
}

}  // namespace llmserve
