// The HTTP server's connection-phase guard: one thread that owns every connection while its
// request arrives (the TLS handshake, the head, the body) and hands a connection to a worker only
// once its request is complete. So a slow or silent client holds no worker, the whole time to
// receive a head and a body is bounded, the number of such connections is capped apart from
// the workers, and framing errors (RFC 9112 section 6.3) are answered at once.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <openssl/ssl.h>

#include "engine/core/status.h"
#include "server/http/http_connection.h"

namespace llmserve {

using ConnectionPtr = std::shared_ptr<HttpConnection>;

struct GuardOptions {
  FramingLimits limits;
  std::chrono::milliseconds head_timeout{10000};       // accept / first byte -> head complete
  std::chrono::milliseconds body_timeout{30000};       // head complete -> body complete
  std::chrono::milliseconds keep_alive_timeout{5000};  // idle between requests
  int max_pending_connections = 1024;                  // beyond: the oldest is evicted
  size_t max_buffered_bytes = 256u << 20;              // all connections' unserved bytes
  SSL_CTX* ssl_ctx = nullptr;                          // TLS when set
  // True when a request of this method and path must carry a body (no length: 411).
  std::function<bool(const RequestHead&)> requires_body;
};

class ConnectionGuard {
 public:
  // `ready` gets a connection whose conn->request holds one complete request (head with a
  // Content-Length, then the body); `reject` one to answer with `status` and close. Both are
  // called on the guard thread and take ownership.
  using ReadyFn = std::function<void(ConnectionPtr)>;
  using RejectFn = std::function<void(ConnectionPtr, int status, std::string message)>;

  ConnectionGuard(GuardOptions options, ReadyFn ready, RejectFn reject);
  ~ConnectionGuard();

  Status start();
  // Closes every connection it holds; later adopt/resume calls close theirs at once.
  void stop();

  // A socket just accepted (any thread).
  void adopt(int fd);
  // A connection kept alive after its response (any thread).
  void resume(ConnectionPtr conn);

 private:
  struct Entry {
    ConnectionPtr conn;
    size_t accounted = 0;  // bytes counted in buffered_
    uint32_t events = 0;   // registered epoll events
  };

  void run();
  void take_inbox();
  void add(ConnectionPtr conn);
  void on_event(int fd);
  // Reads what arrived and moves the request on; false when the entry was removed.
  bool advance(Entry& e);
  bool frame(Entry& e);
  void finish(int fd, ConnectionPtr* out);
  void dispatch(Entry& e, std::string request, size_t consumed);
  void reject(int fd, int status, std::string message);
  void close(int fd);
  void expire();
  void evict_for_new();
  void account(Entry& e);
  void update_events(Entry& e);
  SteadyClock::time_point next_deadline() const;

  GuardOptions options_;
  ReadyFn ready_;
  RejectFn reject_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  std::mutex inbox_mu_;
  std::vector<int> new_fds_;
  std::vector<ConnectionPtr> resumed_;

  std::unordered_map<int, Entry> entries_;  // guard thread only
  size_t buffered_ = 0;
};

}  // namespace llmserve
