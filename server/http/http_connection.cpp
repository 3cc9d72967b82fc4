#include "server/http/http_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <openssl/err.h>

namespace llmserve {

namespace {

thread_local HttpConnection* t_current = nullptr;

void address_of(int fd, bool peer, std::string* ip, int* port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                      : ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    *port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    *port = ntohs(a->sin6_port);
  }
  *ip = text;
}

// Waits until the socket is ready for `events`, up to `timeout_ms`; false on timeout or error.
bool wait_for(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int rc = ::poll(&p, 1, timeout_ms);
    if (rc < 0 && errno == EINTR) continue;
    return rc > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0 && (p.revents & POLLNVAL) == 0;
  }
}

}  // namespace

HttpConnection::HttpConnection(int fd_, SSL* ssl_, FramingLimits limits_)
    : fd(fd_), ssl(ssl_), limits(limits_), scanner(limits_), chunked(limits_.max_body_bytes) {
  address_of(fd, true, &peer_ip, &peer_port);
  address_of(fd, false, &local_ip, &local_port);
}

HttpConnection::~HttpConnection() {
  if (ssl != nullptr) {
    SSL_shutdown(ssl);
    SSL_free(ssl);
  }
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

void HttpConnection::begin_request(Phase p, SteadyClock::time_point d) {
  phase = p;
  phase_start = SteadyClock::now();
  deadline = d;
  scanner = RequestHeadScanner(limits);
  head = RequestHead();
  chunked = ChunkedBodyDecoder(limits.max_body_bytes);
  chunked_fed = 0;
  scanning = false;
}

long read_available(HttpConnection& conn, std::string& out, size_t max_bytes) {
  char buf[16384];
  long total = 0;
  conn.want_write = false;
  while (static_cast<size_t>(total) < max_bytes) {
    const size_t want = std::min(sizeof(buf), max_bytes - static_cast<size_t>(total));
    if (conn.ssl != nullptr) {
      const int n = SSL_read(conn.ssl, buf, static_cast<int>(want));
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
        total += n;
        continue;
      }
      const int err = SSL_get_error(conn.ssl, n);
      ERR_clear_error();
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        conn.want_write = err == SSL_ERROR_WANT_WRITE;
        return total > 0 ? total : -1;
      }
      if (err == SSL_ERROR_ZERO_RETURN) return total > 0 ? total : 0;
      return total > 0 ? total : -2;
    }
    const ssize_t n = ::recv(conn.fd, buf, want, 0);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      total += n;
      continue;
    }
    if (n == 0) return total > 0 ? total : 0;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return total > 0 ? total : -1;
    return total > 0 ? total : -2;
  }
  return total;
}

bool write_fully(HttpConnection& conn, std::string_view data, std::chrono::milliseconds timeout) {
  const auto give_up = SteadyClock::now() + timeout;
  auto remaining_ms = [&] {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(give_up - SteadyClock::now());
    return static_cast<int>(std::max<int64_t>(left.count(), 0));
  };
  while (!data.empty()) {
    if (conn.ssl != nullptr) {
      const int n = SSL_write(conn.ssl, data.data(), static_cast<int>(data.size()));
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      const int err = SSL_get_error(conn.ssl, n);
      ERR_clear_error();
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) return false;
      if (!wait_for(conn.fd, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, remaining_ms())) {
        return false;
      }
      continue;
    }
    const ssize_t n = ::send(conn.fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(conn.fd, POLLOUT, remaining_ms())) return false;
      continue;
    }
    return false;
  }
  return true;
}

bool peer_closed(const HttpConnection& conn) {
  pollfd p{conn.fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

bool ConnectionStream::is_readable() const {
  return conn_.request_read < conn_.request.size();
}

bool ConnectionStream::is_writable() const {
  pollfd p{conn_.fd, POLLOUT, 0};
  const int rc = ::poll(&p, 1, static_cast<int>(write_timeout_.count()));
  return rc > 0 && (p.revents & POLLOUT) != 0 && (p.revents & (POLLERR | POLLHUP)) == 0;
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  const size_t n = std::min(size, conn_.request.size() - conn_.request_read);
  std::copy_n(conn_.request.data() + conn_.request_read, n, ptr);
  conn_.request_read += n;
  return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  return write_fully(conn_, std::string_view(ptr, size), write_timeout_)
             ? static_cast<ssize_t>(size)
             : -1;
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = conn_.peer_ip;
  port = conn_.peer_port;
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  ip = conn_.local_ip;
  port = conn_.local_port;
}

HttpConnection* current_http_connection() {
  return t_current;
}

void set_current_http_connection(HttpConnection* conn) {
  t_current = conn;
}

bool http_client_disconnected() {
  return t_current != nullptr && peer_closed(*t_current);
}

}  // namespace llmserve
