// The HTTP server's connection handling over raw sockets, against FakeEngine: slow clients hold
// no worker and are cut off after a bounded time, framing errors are answered at once, probes
// answer while every worker streams, and a unary request whose client left is cancelled.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/http/http_server.h"
#include "tests/unit/server/fake_engine.h"

namespace llmserve {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::FakeEngine;
using testing::FakeScript;

int open_connection(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

bool send_text(int fd, const std::string& s) {
  return ::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
}

// Reads until the peer closes (then *closed is set), `until` appears, or `timeout` passes.
std::string read_for(int fd, milliseconds timeout, const std::string& until = "",
                     bool* closed = nullptr) {
  std::string out;
  const auto give_up = Clock::now() + timeout;
  char buf[8192];
  while (Clock::now() < give_up) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<milliseconds>(give_up - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      if (closed != nullptr) *closed = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
    if (!until.empty() && out.find(until) != std::string::npos) break;
  }
  return out;
}

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return -1;
  return std::stoi(response.substr(9, 3));
}

class ConnectionGuardTest : public ::testing::Test {
 protected:
  void start(ServerOptions o = {}) {
    o.host = "127.0.0.1";
    o.http_port = 0;
    if (o.http_threads == 64) o.http_threads = 4;
    o.max_body_bytes = 1 << 16;
    state_ = std::make_unique<ServerState>(&engine_, o);
    server_ = std::make_unique<HttpServer>(*state_, metrics_, ChatRenderer());
    ASSERT_TRUE(server_->start().is_ok());
  }
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    if (server_) server_->stop();
    engine_.shutdown();
  }
  int connect() {
    const int fd = open_connection(server_->port());
    fds_.push_back(fd);
    return fd;
  }
  // One request on a fresh connection; the response text.
  std::string request(const std::string& text, milliseconds timeout = milliseconds(5000)) {
    const int fd = connect();
    EXPECT_TRUE(send_text(fd, text));
    return read_for(fd, timeout);
  }

  FakeEngine engine_;
  ServerMetrics metrics_;
  std::unique_ptr<ServerState> state_;
  std::unique_ptr<HttpServer> server_;
  std::vector<int> fds_;
};

const std::string kHealth = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

TEST_F(ConnectionGuardTest, SlowHeadsHoldNoWorkerAndAreCutOffAfterTheHeadTimeout) {
  ServerOptions o;
  o.http_threads = 4;
  o.request_head_timeout_seconds = 1.5;
  start(o);
  // More trickling connections than workers: each sends part of a head, then a byte at a time.
  std::vector<int> slow;
  for (int i = 0; i < 12; ++i) {
    slow.push_back(connect());
    ASSERT_TRUE(send_text(slow.back(), "GET /health HTTP/1.1\r\nHost: x\r\n"));
  }
  for (int round = 0; round < 3; ++round) {
    for (int fd : slow) send_text(fd, "X");
    const std::string r = request(kHealth, milliseconds(2000));
    EXPECT_EQ(status_of(r), 200) << "round " << round;
    std::this_thread::sleep_for(milliseconds(200));
  }
  // The whole head was due 1.5 s after accept, however the bytes trickled: 408, then closed.
  for (int fd : slow) {
    const std::string r = read_for(fd, milliseconds(3000));
    EXPECT_EQ(status_of(r), 408);
    EXPECT_NE(r.find("\"error\""), std::string::npos);
  }
}

TEST_F(ConnectionGuardTest, SilentConnectionsAreClosedWithoutAnAnswer) {
  ServerOptions o;
  o.request_head_timeout_seconds = 0.5;
  start(o);
  const int fd = connect();
  // Closed, with nothing sent, well before a per-read timeout (cpp-httplib's was 30 s) would.
  bool closed = false;
  EXPECT_EQ(read_for(fd, milliseconds(3000), "", &closed), "");
  EXPECT_TRUE(closed);
}

TEST_F(ConnectionGuardTest, FramingErrorsAreAnsweredAtOnce) {
  start();
  struct Case {
    std::string text;
    int status;
  };
  const std::vector<Case> cases = {
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: 38\r\nContent-Length: 5\r\n\r\nhello",
       400},
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: 9000000\r\n\r\n", 413},
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413},
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n", 411},
      {"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n",
       400},
  };
  // Each answer comes within the read window, while cpp-httplib waited 30 s for the body first.
  for (const Case& c : cases) {
    const std::string r = request(c.text);
    EXPECT_EQ(status_of(r), c.status) << c.text;
    EXPECT_NE(r.find("\"error\""), std::string::npos) << r;
  }
}

TEST_F(ConnectionGuardTest, TooManyHeadersIs431BeforeTheHeadEnds) {
  ServerOptions o;
  o.max_header_count = 50;
  start(o);
  const int fd = connect();
  std::string many = "GET /health HTTP/1.1\r\n";
  for (int i = 0; i < 2000; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  send_text(fd, many);  // no blank line: the head never ends
  const std::string r = read_for(fd, milliseconds(2000));
  EXPECT_EQ(status_of(r), 431);
}

TEST_F(ConnectionGuardTest, BodilessPostWithoutLengthIsServedAtOnce) {
  start();
  // The cancel route takes no body: an empty one is implied, and it answers within the read
  // window (cpp-httplib read a body until the connection closed).
  const std::string r =
      request("POST /v1/requests/none/cancel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(r), 404) << r;
  const std::string d =
      request("DELETE /v1/requests/none HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(d), 404) << d;
}

TEST_F(ConnectionGuardTest, ChunkedBodyAndExpectContinue) {
  start();
  const std::string body = R"({"prompt":"hi","max_tokens":2})";
  const std::string half = body.substr(0, 10), rest = body.substr(10);
  auto hex = [](size_t n) {
    char b[16];
    std::snprintf(b, sizeof(b), "%zx", n);
    return std::string(b);
  };
  const std::string chunked =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
      "chunked\r\nConnection: close\r\n\r\n" +
      hex(half.size()) + "\r\n" + half + "\r\n" + hex(rest.size()) + "\r\n" + rest +
      "\r\n0\r\n\r\n";
  const std::string r = request(chunked);
  EXPECT_EQ(status_of(r), 200) << r;
  EXPECT_NE(r.find("\"text_completion\""), std::string::npos) << r;

  const int fd = connect();
  send_text(fd, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                    std::to_string(body.size()) +
                    "\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n");
  const std::string cont = read_for(fd, milliseconds(2000), "\r\n\r\n");
  EXPECT_EQ(status_of(cont), 100) << cont;
  send_text(fd, body);
  const std::string final_response = read_for(fd, milliseconds(5000));
  EXPECT_EQ(status_of(final_response), 200) << final_response;
}

TEST_F(ConnectionGuardTest, KeepAliveAndPipelinedRequests) {
  start();
  const int fd = connect();
  const std::string one = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  send_text(fd, one);
  std::string r = read_for(fd, milliseconds(2000), "}");  // the whole first response
  EXPECT_EQ(status_of(r), 200);
  // Two requests in one write, on the same connection: two answers, in order.
  send_text(fd, one + "GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  r = read_for(fd, milliseconds(3000));
  EXPECT_EQ(status_of(r), 200);
  const size_t second = r.find("HTTP/1.1 ", 1);
  ASSERT_NE(second, std::string::npos) << r;
  EXPECT_EQ(status_of(r.substr(second)), 200);
  EXPECT_NE(r.find("version"), std::string::npos);
}

TEST_F(ConnectionGuardTest, ProbesAnswerWhileEveryWorkerStreams) {
  FakeScript s;
  s.pieces.assign(200, "t");
  s.step_delay = milliseconds(20);
  engine_.set_script(s);
  ServerOptions o;
  o.http_threads = 4;
  o.max_concurrent_generations = 16;
  start(o);
  const std::string body = R"({"prompt":"hi","stream":true,"max_tokens":200})";
  std::vector<int> streams;
  for (int i = 0; i < 6; ++i) {  // 4 workers busy, 2 more queued behind them
    streams.push_back(connect());
    send_text(streams.back(), "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                  std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  std::this_thread::sleep_for(milliseconds(300));
  // Queued behind the streams they would wait ~4 s; on their own pool they answer in the window.
  for (const char* path : {"/health", "/ready", "/metrics"}) {
    const std::string r =
        request(std::string("GET ") + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                milliseconds(2000));
    EXPECT_EQ(status_of(r), 200) << path;
  }
}

TEST_F(ConnectionGuardTest, PendingConnectionsAreCappedOldestFirst) {
  ServerOptions o;
  o.max_pending_connections = 8;
  o.request_head_timeout_seconds = 30;
  start(o);
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) {
    idle.push_back(connect());
    send_text(idle.back(), "GET /health HTTP/1.1\r\n");
    std::this_thread::sleep_for(milliseconds(20));
  }
  // A new client is still served; the connection that waited longest made room.
  EXPECT_EQ(status_of(request(kHealth, milliseconds(2000))), 200);
  EXPECT_EQ(status_of(read_for(idle.front(), milliseconds(2000))), 408);
}

TEST_F(ConnectionGuardTest, UnaryRequestWhoseClientLeftIsCancelled) {
  FakeScript s;
  s.pieces.assign(200, "t");
  s.step_delay = milliseconds(50);
  engine_.set_script(s);
  start();
  const std::string body = R"({"prompt":"Count forever:","max_tokens":200})";
  const int fd = connect();
  send_text(fd, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body);
  std::this_thread::sleep_for(milliseconds(300));
  ASSERT_EQ(engine_.submitted().size(), 1u);
  ::close(fd);
  fds_.pop_back();
  // 200 tokens at 50 ms would run 10 s: idle within 5 s only if the request was aborted.
  EXPECT_TRUE(engine_.wait_until_idle(std::chrono::seconds(5)));
  EXPECT_EQ(engine_.aborted().size(), 1u);
}

}  // namespace
}  // namespace llmserve
