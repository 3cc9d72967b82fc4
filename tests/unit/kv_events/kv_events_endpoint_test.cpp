// Where the KV-event sockets listen (issue 51, finding 4: the PUB socket bound tcp://* whatever
// server.host said, and an outside subscriber read other users' prompts). With the default
// configuration the events follow server.host: nothing listens on 0.0.0.0 or ::, and a
// subscriber on loopback still gets every batch.
#include <zmq.h>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "config/config.h"
#include "server/kv_events/kv_events_endpoint.h"
#include "server/kv_events/zmq_kv_publisher.h"

namespace llmserve {
namespace {

TEST(KvEventsEndpoint, DefaultBindsServerHostOnly) {
  const Config c;  // the built-in defaults
  const KvEventsEndpoint e = kv_events_pub_endpoint(c.server.host, c.kv_events.host,
                                                    c.kv_events.port, c.kv_events.endpoint);
  EXPECT_EQ(e.endpoint, "tcp://127.0.0.1:5557");
  EXPECT_TRUE(e.bind);
  EXPECT_FALSE(e.every_interface);
  EXPECT_FALSE(e.ipv6);
}

TEST(KvEventsEndpoint, FollowsServerHostUnlessToldOtherwise) {
  EXPECT_EQ(kv_events_pub_endpoint("10.0.0.5", "", 5557, "").endpoint, "tcp://10.0.0.5:5557");
  EXPECT_EQ(kv_events_pub_endpoint("0.0.0.0", "10.0.0.7", 6000, "").endpoint,
            "tcp://10.0.0.7:6000");
  EXPECT_EQ(kv_events_pub_endpoint("127.0.0.1", "", 0, "").endpoint, "tcp://127.0.0.1:*");
  const KvEventsEndpoint v6 = kv_events_pub_endpoint("::1", "", 5557, "");
  EXPECT_EQ(v6.endpoint, "tcp://[::1]:5557");
  EXPECT_TRUE(v6.ipv6);
  EXPECT_FALSE(v6.every_interface);
  // server.host 0.0.0.0 is the operator's choice of every interface: it is followed, and flagged.
  EXPECT_TRUE(kv_events_pub_endpoint("0.0.0.0", "", 5557, "").every_interface);
  EXPECT_TRUE(kv_events_pub_endpoint("::", "", 5557, "").every_interface);
}

TEST(KvEventsEndpoint, AnExplicitEndpointKeepsVllmsRule) {
  const KvEventsEndpoint star = kv_events_pub_endpoint("127.0.0.1", "", 5557, "tcp://*:6000");
  EXPECT_TRUE(star.bind);
  EXPECT_TRUE(star.every_interface);  // written by the operator: bound, and warned about
  const KvEventsEndpoint peer =
      kv_events_pub_endpoint("127.0.0.1", "", 5557, "tcp://router.internal:5557");
  EXPECT_FALSE(peer.bind);  // connected to a subscriber that binds: nothing listens here
  EXPECT_FALSE(peer.every_interface);
  EXPECT_TRUE(kv_events_pub_endpoint("127.0.0.1", "", 5557, "ipc:///tmp/kv").bind);
  EXPECT_TRUE(kv_events_replay_endpoint("tcp://*:5558").every_interface);
  EXPECT_FALSE(kv_events_replay_endpoint("tcp://127.0.0.1:5558").every_interface);
}

// This process's listening TCP sockets on `port`: "addr:port" strings from /proc/net/tcp{,6}
// whose inode is one of /proc/self/fd's sockets.
std::vector<std::string> listeners_on(int port) {
  std::set<std::string> inodes;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* ent = readdir(d)) {
      char target[256];
      const std::string path = std::string("/proc/self/fd/") + ent->d_name;
      const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      const std::string t(target, static_cast<size_t>(n));
      if (t.starts_with("socket:[")) inodes.insert(t.substr(8, t.size() - 9));
    }
    closedir(d);
  }
  std::vector<std::string> out;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, tr, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> queues >> tr >> retr >> uid >> timeout >> inode;
      if (state != "0A" || !inodes.count(inode)) continue;  // 0A: LISTEN
      const size_t colon = local.find(':');
      if (std::stoi(local.substr(colon + 1), nullptr, 16) != port) continue;
      out.push_back(std::string(file).ends_with("6") ? "v6:" + local.substr(0, colon)
                                                     : local.substr(0, colon));
    }
  }
  return out;
}

int port_of(const std::string& endpoint) {
  return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

TEST(KvEventsEndpoint, DefaultPublisherListensOnLoopbackOnlyAndServesLoopback) {
  const Config c;
  ASSERT_EQ(c.server.host, "127.0.0.1");
  ZmqKvPublisherOptions o;
  // The defaults, with a port the OS picks (a fixed one may be taken on a shared machine).
  o.endpoint = kv_events_pub_endpoint(c.server.host, c.kv_events.host, 0, c.kv_events.endpoint);
  KvEventBus bus(8);
  auto pub = ZmqKvPublisher::start(bus, o);
  ASSERT_TRUE(pub.is_ok()) << pub.status().to_string();
  const std::string bound = (*pub)->pub_endpoint();
  const int port = port_of(bound);
  ASSERT_GT(port, 0) << bound;
  // 0100007F = 127.0.0.1 (little-endian hex); 00000000 would be every interface.
  EXPECT_EQ(listeners_on(port), std::vector<std::string>{"0100007F"}) << bound;

  void* ctx = zmq_ctx_new();
  void* sub = zmq_socket(ctx, ZMQ_SUB);
  zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
  int timeout_ms = 5000;
  zmq_setsockopt(sub, ZMQ_RCVTIMEO, &timeout_ms, sizeof(timeout_ms));
  ASSERT_EQ(zmq_connect(sub, ("tcp://127.0.0.1:" + std::to_string(port)).c_str()), 0);
  // PUB/SUB joins late: publish until the subscriber sees a batch.
  std::string seq;
  for (int i = 0; i < 50 && seq.empty(); ++i) {
    bus.publish({KvBlockRemoved{{static_cast<uint64_t>(i + 1)}, {}}}, 1.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    char frame[64];
    const int n = zmq_recv(sub, frame, sizeof(frame), ZMQ_DONTWAIT);
    if (n >= 0) seq = "got";
  }
  EXPECT_FALSE(seq.empty()) << "no batch reached a loopback subscriber";
  zmq_close(sub);
  zmq_ctx_term(ctx);
}

}  // namespace
}  // namespace llmserve
