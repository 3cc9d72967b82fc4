// The HTTP server's listening socket: a burst of connections is served without drops or resets
// (cpp-httplib 0.11 listens with a backlog of 5; the server raises it), and a second server
// cannot bind a port that is in use (cpp-httplib's default SO_REUSEPORT allowed it).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "server/http/http_server.h"
#include "tests/unit/server/fake_engine.h"

namespace llmserve {
namespace {

class HttpSocketTest : public ::testing::Test {
 protected:
  std::unique_ptr<HttpServer> make(int port) {
    ServerOptions o;
    o.host = "127.0.0.1";
    o.http_port = port;
    o.http_threads = 8;
    states_.push_back(std::make_unique<ServerState>(&engine_, o));
    return std::make_unique<HttpServer>(*states_.back(), metrics_, ChatRenderer());
  }
  void TearDown() override { engine_.shutdown(); }

  testing::FakeEngine engine_;
  ServerMetrics metrics_;
  std::vector<std::unique_ptr<ServerState>> states_;
};

// Connects (blocking) and sends one request; -1 on failure.
int connect_and_send(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

TEST_F(HttpSocketTest, BurstOfConnectionsIsServedWithoutResets) {
  auto server = make(0);
  ASSERT_TRUE(server->start().is_ok());
  // All connections are opened before any response is read, so the accept queue must hold
  // most of them at once; with a backlog of 5 some were dropped or reset (SYN cookies).
  constexpr int kConnections = 200;
  const std::string request = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  std::vector<int> fds;
  for (int i = 0; i < kConnections; ++i) fds.push_back(connect_and_send(server->port(), request));
  int ok = 0;
  for (int fd : fds) {
    if (fd < 0) continue;
    if (read_all(fd).rfind("HTTP/1.1 200", 0) == 0) ++ok;
    ::close(fd);
  }
  EXPECT_EQ(ok, kConnections);
  server->stop();
}

TEST_F(HttpSocketTest, SecondServerCannotBindAPortInUse) {
  auto first = make(0);
  ASSERT_TRUE(first->start().is_ok());
  auto second = make(first->port());
  EXPECT_FALSE(second->start().is_ok());
  first->stop();
}

}  // namespace
}  // namespace llmserve
