#include "server/http/connection_guard.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <openssl/err.h>

namespace llmserve {

namespace {

constexpr size_t kReadChunk = 64 << 10;

std::string seconds_text(std::chrono::milliseconds ms) {
  const double s = static_cast<double>(ms.count()) / 1000.0;
  std::string t = std::to_string(s);
  t.erase(t.find_last_not_of('0') + 1);
  if (!t.empty() && t.back() == '.') t.pop_back();
  return t;
}

}  // namespace

ConnectionGuard::ConnectionGuard(GuardOptions options, ReadyFn ready, RejectFn reject)
    : options_(std::move(options)), ready_(std::move(ready)), reject_(std::move(reject)) {}

ConnectionGuard::~ConnectionGuard() {
  stop();
}

Status ConnectionGuard::start() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return unavailable("HTTP: cannot create the epoll loop");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = std::thread([this] { run(); });
  return Status::ok();
}

void ConnectionGuard::stop() {
  if (stopping_.exchange(true)) return;
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
  entries_.clear();
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    for (int fd : new_fds_) ::close(fd);
    new_fds_.clear();
    resumed_.clear();
  }
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  epoll_fd_ = wake_fd_ = -1;
}

void ConnectionGuard::adopt(int fd) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    new_fds_.push_back(fd);
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

void ConnectionGuard::resume(ConnectionPtr conn) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    if (stopping_) return;  // conn closes here
    resumed_.push_back(std::move(conn));
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

void ConnectionGuard::run() {
  std::vector<epoll_event> events(256);
  while (!stopping_) {
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_deadline() - SteadyClock::now());
    const int timeout = static_cast<int>(std::clamp<int64_t>(wait.count() + 1, 0, 1000));
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == wake_fd_) {
        uint64_t count = 0;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &count, sizeof(count));
        take_inbox();
      } else {
        on_event(fd);
      }
    }
    expire();
  }
}

void ConnectionGuard::take_inbox() {
  std::vector<int> fds;
  std::vector<ConnectionPtr> resumed;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    fds.swap(new_fds_);
    resumed.swap(resumed_);
  }
  for (int fd : fds) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    SSL* ssl = nullptr;
    if (options_.ssl_ctx != nullptr) {
      ssl = SSL_new(options_.ssl_ctx);
      if (ssl == nullptr) {
        ::close(fd);
        continue;
      }
      SSL_set_fd(ssl, fd);
      SSL_set_accept_state(ssl);
    }
    auto conn = std::make_shared<HttpConnection>(fd, ssl, options_.limits);
    // The first request's head is due within head_timeout of the accept.
    conn->begin_request(
        ssl != nullptr ? HttpConnection::Phase::kHandshake : HttpConnection::Phase::kHead,
        SteadyClock::now() + options_.head_timeout);
    add(std::move(conn));
  }
  for (ConnectionPtr& conn : resumed) {
    conn->request.clear();
    conn->request_read = 0;
    conn->begin_request(HttpConnection::Phase::kIdle,
                        SteadyClock::now() + options_.keep_alive_timeout);
    const int fd = conn->fd;
    add(std::move(conn));
    // Bytes of the next request may already be here (pipelined, or held by TLS).
    if (entries_.count(fd) != 0) advance(entries_.at(fd));
  }
}

void ConnectionGuard::add(ConnectionPtr conn) {
  if (static_cast<int>(entries_.size()) >= options_.max_pending_connections) evict_for_new();
  const int fd = conn->fd;
  Entry& e = entries_[fd];
  e.conn = std::move(conn);
  e.events = EPOLLIN | EPOLLRDHUP;
  epoll_event ev{};
  ev.events = e.events;
  ev.data.fd = fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  account(e);
}

void ConnectionGuard::on_event(int fd) {
  auto it = entries_.find(fd);
  if (it != entries_.end()) advance(it->second);
}

bool ConnectionGuard::advance(Entry& e) {
  HttpConnection& c = *e.conn;
  const int fd = c.fd;
  for (;;) {
    if (c.phase == HttpConnection::Phase::kHandshake) {
      const int rc = SSL_do_handshake(c.ssl);
      if (rc == 1) {
        c.phase = HttpConnection::Phase::kHead;
        continue;
      }
      const int err = SSL_get_error(c.ssl, rc);
      ERR_clear_error();
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
        close(fd);
        return false;
      }
      c.want_write = err == SSL_ERROR_WANT_WRITE;
      update_events(e);
      return true;
    }
    size_t cap = kReadChunk;
    if (c.phase == HttpConnection::Phase::kBody) {
      const size_t end = c.head.head_bytes + static_cast<size_t>(c.head.content_length);
      cap = end > c.in.size() ? end - c.in.size() : 0;
    }
    if (cap > 0 && buffered_ + cap > options_.max_buffered_bytes) {
      reject(fd, 503, "the server holds too many unfinished requests; retry later");
      return false;
    }
    long n = cap > 0 ? read_available(c, c.in, cap) : -1;
    account(e);
    if (n == 0 || n == -2) {
      close(fd);
      return false;
    }
    update_events(e);
    if (!frame(e)) return false;
    // TLS may hold decrypted bytes the socket will not signal again.
    const bool more = c.ssl != nullptr && SSL_pending(c.ssl) > 0;
    if (!more || n < 0) return true;
  }
}

// Moves the request on with the bytes in conn.in; false when the entry left the guard.
bool ConnectionGuard::frame(Entry& e) {
  HttpConnection& c = *e.conn;
  const int fd = c.fd;
  using Phase = HttpConnection::Phase;
  for (;;) {
    switch (c.phase) {
      case Phase::kHandshake:
        return true;
      case Phase::kIdle:
      case Phase::kHead: {
        if (!c.scanning) {
          // RFC 9112 section 2.2: empty lines before a request line are ignored.
          const size_t skip = c.in.find_first_not_of("\r\n");
          c.in.erase(0, skip == std::string::npos ? c.in.size() : skip);
          if (c.in.empty()) return true;
          if (c.phase == Phase::kIdle) {
            c.begin_request(Phase::kHead, SteadyClock::now() + options_.head_timeout);
          }
          c.scanning = true;
        }
        FramingError error;
        if (!c.scanner.scan(c.in, &c.head, &error)) return true;
        if (error) {
          reject(fd, error.status, error.message);
          return false;
        }
        const RequestHead& h = c.head;
        if (h.body == BodyFraming::kNone) {
          if (options_.requires_body && options_.requires_body(h)) {
            reject(fd, 411, "a request body with a Content-Length header is required");
            return false;
          }
          // A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112
          // section 6.3): the worker's stream ends with its head, where cpp-httplib would have
          // read the socket until the client closed it.
          dispatch(e, c.in.substr(0, h.head_bytes), h.head_bytes);
          return false;
        }
        if (h.expect_continue) {
          static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
          if (!write_fully(c, kContinue, std::chrono::milliseconds(200))) {
            close(fd);
            return false;
          }
        }
        c.phase = h.body == BodyFraming::kLength ? Phase::kBody : Phase::kChunked;
        c.phase_start = SteadyClock::now();
        c.deadline = SteadyClock::now() + options_.body_timeout;
        continue;
      }
      case Phase::kBody: {
        const RequestHead& h = c.head;
        const size_t end = h.head_bytes + static_cast<size_t>(h.content_length);
        if (c.in.size() < end) return true;
        std::string request =
            h.expect_continue
                ? rewrite_head(std::string_view(c.in).substr(0, h.head_bytes), h.content_length)
                : c.in.substr(0, h.head_bytes);
        request.append(c.in, h.head_bytes, static_cast<size_t>(h.content_length));
        dispatch(e, std::move(request), end);
        return false;
      }
      case Phase::kChunked: {
        const RequestHead& h = c.head;
        size_t consumed = 0;
        const size_t from = h.head_bytes + c.chunked_fed;
        if (from >= c.in.size()) return true;
        const auto result = c.chunked.feed(std::string_view(c.in).substr(from), &consumed);
        c.chunked_fed += consumed;
        account(e);
        if (result == ChunkedBodyDecoder::Result::kError) {
          reject(fd, c.chunked.error().status, c.chunked.error().message);
          return false;
        }
        if (result == ChunkedBodyDecoder::Result::kNeedMore) return true;
        std::string request =
            rewrite_head(std::string_view(c.in).substr(0, h.head_bytes), c.chunked.body().size());
        request += c.chunked.body();
        dispatch(e, std::move(request), h.head_bytes + c.chunked_fed);
        return false;
      }
    }
  }
}

void ConnectionGuard::finish(int fd, ConnectionPtr* out) {
  auto it = entries_.find(fd);
  if (it == entries_.end()) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  buffered_ -= it->second.accounted;
  if (out != nullptr) *out = std::move(it->second.conn);
  entries_.erase(it);
}

void ConnectionGuard::dispatch(Entry& e, std::string request, size_t consumed) {
  ConnectionPtr conn;
  finish(e.conn->fd, &conn);
  conn->in.erase(0, consumed);
  conn->request = std::move(request);
  conn->request_read = 0;
  ready_(std::move(conn));
}

void ConnectionGuard::reject(int fd, int status, std::string message) {
  ConnectionPtr conn;
  finish(fd, &conn);
  if (conn) reject_(std::move(conn), status, std::move(message));
}

void ConnectionGuard::close(int fd) {
  finish(fd, nullptr);
}

void ConnectionGuard::expire() {
  const auto now = SteadyClock::now();
  std::vector<std::pair<int, bool>> due;  // fd, answer with 408
  for (const auto& [fd, e] : entries_) {
    if (e.conn->deadline > now) continue;
    const auto phase = e.conn->phase;
    const bool started = (phase == HttpConnection::Phase::kHead && e.conn->scanning) ||
                         phase == HttpConnection::Phase::kBody ||
                         phase == HttpConnection::Phase::kChunked;
    due.emplace_back(fd, started);
  }
  for (const auto& [fd, answer] : due) {
    if (!answer) {
      close(fd);
      continue;
    }
    const auto phase = entries_.at(fd).conn->phase;
    const bool head = phase == HttpConnection::Phase::kHead;
    reject(fd, 408,
           std::string(head ? "the request head was not received within "
                            : "the request body was not received within ") +
               seconds_text(head ? options_.head_timeout : options_.body_timeout) + " s");
  }
}

// At the cap: an idle kept-alive connection goes first, else the one waiting longest.
void ConnectionGuard::evict_for_new() {
  int victim = -1;
  bool victim_idle = false;
  SteadyClock::time_point oldest = SteadyClock::time_point::max();
  for (const auto& [fd, e] : entries_) {
    const bool idle = e.conn->phase == HttpConnection::Phase::kIdle;
    if ((idle && !victim_idle) || (idle == victim_idle && e.conn->phase_start < oldest)) {
      victim = fd;
      victim_idle = idle;
      oldest = e.conn->phase_start;
    }
  }
  if (victim < 0) return;
  if (victim_idle) {
    close(victim);
  } else {
    reject(victim, 408, "too many connections are sending requests; this one waited longest");
  }
}

void ConnectionGuard::account(Entry& e) {
  const size_t now = e.conn->in.size() + e.conn->chunked.body().size();
  buffered_ = buffered_ - e.accounted + now;
  e.accounted = now;
}

void ConnectionGuard::update_events(Entry& e) {
  const uint32_t want = EPOLLIN | EPOLLRDHUP | (e.conn->want_write ? EPOLLOUT : 0u);
  if (want == e.events) return;
  e.events = want;
  epoll_event ev{};
  ev.events = want;
  ev.data.fd = e.conn->fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, e.conn->fd, &ev);
}

SteadyClock::time_point ConnectionGuard::next_deadline() const {
  SteadyClock::time_point next = SteadyClock::now() + std::chrono::seconds(1);
  for (const auto& [fd, e] : entries_) next = std::min(next, e.conn->deadline);
  return next;
}

}  // namespace llmserve
