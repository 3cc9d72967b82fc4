// One client connection of the HTTP server: its non-blocking socket (and TLS session), the bytes
// received and not yet served, and the framed request a worker serves next. The connection
// guard owns it while a request arrives; a worker owns it while the request is served.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <httplib.h>
#include <openssl/ssl.h>

#include "server/http/request_framing.h"

namespace llmserve {

using SteadyClock = std::chrono::steady_clock;

struct HttpConnection {
  enum class Phase { kHandshake, kIdle, kHead, kBody, kChunked };

  HttpConnection(int fd, SSL* ssl, FramingLimits limits);
  ~HttpConnection();  // closes the socket (TLS: a best-effort close_notify first)
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  int fd;
  SSL* ssl;  // null for plain TCP
  std::string peer_ip;
  int peer_port = 0;
  std::string local_ip;
  int local_port = 0;

  // Guard side: the bytes received of the next request (and any after it), and its framing.
  std::string in;
  Phase phase = Phase::kHead;
  SteadyClock::time_point phase_start = SteadyClock::now();
  SteadyClock::time_point deadline = SteadyClock::time_point::max();
  FramingLimits limits;
  RequestHeadScanner scanner;
  RequestHead head;
  ChunkedBodyDecoder chunked;
  size_t chunked_fed = 0;   // bytes of `in` after the head already given to `chunked`
  bool scanning = false;    // the request's first byte arrived (leading empty lines skipped)
  bool want_write = false;  // TLS needs the socket writable to go on reading
  int requests_served = 0;

  // Worker side: the request as cpp-httplib reads it (head, then exactly its body).
  std::string request;
  size_t request_read = 0;

  // Starts the next request on this connection (scanner and decoder reset).
  void begin_request(Phase phase, SteadyClock::time_point deadline);
};

// Non-blocking read of what is available: > 0 bytes appended to `out`, 0 at end of stream,
// -1 when nothing is available now (TLS: conn.want_write says which way it waits), -2 error.
long read_available(HttpConnection& conn, std::string& out, size_t max_bytes);

// Writes all of `data`, waiting for the socket up to `timeout` overall. False on error/timeout.
bool write_fully(HttpConnection& conn, std::string_view data, std::chrono::milliseconds timeout);

// True when the peer has closed or reset the connection (checked without waiting).
bool peer_closed(const HttpConnection& conn);

// cpp-httplib's view of a connection while a worker serves one request: reads come from
// conn.request, writes go to the socket (each bounded by `write_timeout`).
class ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(HttpConnection& conn, std::chrono::milliseconds write_timeout)
      : conn_(conn), write_timeout_(write_timeout) {}

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return conn_.fd; }

 private:
  HttpConnection& conn_;
  std::chrono::milliseconds write_timeout_;
};

// The connection the calling worker thread is serving (null elsewhere), so a handler waiting
// on the engine can notice that its client went away.
HttpConnection* current_http_connection();
void set_current_http_connection(HttpConnection* conn);
// True when the calling handler's client has disconnected.
bool http_client_disconnected();

}  // namespace llmserve
