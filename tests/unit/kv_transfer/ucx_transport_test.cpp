// Two UcxTransports in one process on loopback (each its own UCP context and worker, as two
// daemons have): a consumer opens a producer's lease (both proving the deployment's secret),
// reads its regions by RMA into its own blocks, and the release ends the lease. Every refusal
// moves no byte: another layout, an ended or guessed lease, a consumer without the secret, a run
// outside the lease, an address outside the producer's peers. One connection serves every pull
// to a producer; a peer that accepts and never answers costs only the open's deadline; UCX
// listens on the configured interface only. Run over UCX's TCP and shared-memory transports.
#include "engine/kv_transfer/ucx_transport.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBlocks = 16;
constexpr uint64_t kKBytes = 256, kScaleBytes = 16;  // one block of each array
constexpr const char* kSecret = "deployment-secret-0123456789";

struct Cache {
  std::vector<uint8_t> mem = std::vector<uint8_t>(kBlocks * (kKBytes + kScaleBytes), 0);
  std::vector<KvArraySpan> arrays{{0, kKBytes}, {kBlocks * kKBytes, kScaleBytes}};
  uint8_t* block(size_t array, int b) {
    return mem.data() + arrays[array].offset + b * arrays[array].block_bytes;
  }
  bool untouched() const { return mem == std::vector<uint8_t>(mem.size(), 0); }
};

KvLayout layout_of(const Cache& c, int32_t block_size = 16) {
  KvLayout l{"m", block_size, "int8", 1, 2, 64, {}};
  for (const auto& a : c.arrays) l.array_block_bytes.push_back(a.block_bytes);
  return l;
}

KvAuth auth(const char* secret = kSecret) {
  return *KvAuth::create(secret);
}

class UcxTransportTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    setenv("UCX_TLS", GetParam(), 1);
    for (size_t i = 0; i < producer_cache.mem.size(); ++i) {
      producer_cache.mem[i] = static_cast<uint8_t>(i * 7 + 3);
    }
    producer = make_producer({});
    ASSERT_NE(producer, nullptr);
    ASSERT_GT(producer->port(), 0);
  }

  std::unique_ptr<UcxTransport> make_producer(std::vector<std::string> allowed, int32_t port = 0) {
    UcxTransportOptions p;
    p.listen = true;
    p.listen_host = "127.0.0.1";
    p.listen_port = port;
    p.net_devices = kv_interface_of("127.0.0.1");
    p.allowed_peers = std::move(allowed);
    p.auth = auth();
    p.layout = layout_of(producer_cache);
    p.base = producer_cache.mem.data();
    p.bytes = producer_cache.mem.size();
    p.arrays = producer_cache.arrays;
    p.leases = &leases;
    p.on_result = [this] { ++producer_wakes; };
    auto prod = UcxTransport::create(std::move(p));
    EXPECT_TRUE(prod.is_ok()) << prod.status().message();
    return prod.is_ok() ? std::move(prod).value() : nullptr;
  }

  std::unique_ptr<UcxTransport> make_consumer(int32_t block_size = 16,
                                              const char* secret = kSecret) {
    UcxTransportOptions c;
    c.net_devices = kv_interface_of("127.0.0.1");
    c.auth = auth(secret);
    c.layout = layout_of(consumer_cache, block_size);
    c.base = consumer_cache.mem.data();
    c.bytes = consumer_cache.mem.size();
    c.arrays = consumer_cache.arrays;
    auto t = UcxTransport::create(std::move(c));
    EXPECT_TRUE(t.is_ok()) << t.status().message();
    return t.is_ok() ? std::move(t).value() : nullptr;
  }

  std::string lease(std::vector<int32_t> blocks, int32_t tokens = 40, uint64_t hash = 0xabc,
                    std::chrono::milliseconds ttl = std::chrono::seconds(60)) {
    return *leases.add({std::move(blocks), tokens, hash}, Clock::now() + ttl);
  }

  static KvPullResult wait(UcxTransport& c, uint64_t id) {
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < until) {
      for (KvPullResult& r : c.take_results()) {
        if (r.id == id) return r;
        ADD_FAILURE() << "a result for another pull: " << r.id;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ADD_FAILURE() << "no result for pull " << id;
    return {};
  }

  // The next `n` results of `c` (any pulls), waiting up to 30 s.
  static std::vector<KvPullResult> collect(UcxTransport& c, size_t n) {
    std::vector<KvPullResult> out;
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (out.size() < n && Clock::now() < until) {
      for (KvPullResult& r : c.take_results()) out.push_back(std::move(r));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_EQ(out.size(), n);
    return out;
  }

  // The leases that end within 30 s (released by a consumer).
  std::vector<KvLeaseTable::Ended> wait_ended() {
    const auto until = Clock::now() + std::chrono::seconds(30);
    std::vector<KvLeaseTable::Ended> ended;
    while (ended.empty() && Clock::now() < until) {
      ended = leases.take_ended(Clock::now());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return ended;
  }

  KvPullResult open(UcxTransport& c, uint64_t id, const std::string& token, int32_t port = 0,
                    double timeout_s = 10) {
    c.open({id, "127.0.0.1", port != 0 ? port : producer->port(), token,
            Clock::now() + std::chrono::milliseconds(static_cast<int>(timeout_s * 1000))});
    return wait(c, id);
  }

  KvPullResult read(UcxTransport& c, uint64_t id, std::vector<KvBlockRun> runs) {
    c.read({id, std::move(runs), Clock::now() + std::chrono::seconds(10)});
    return wait(c, id);
  }

  Cache producer_cache, consumer_cache;
  KvLeaseTable leases;
  std::atomic<int> producer_wakes{0};  // the engine is woken to unpin released leases
  std::unique_ptr<UcxTransport> producer;
};

TEST_P(UcxTransportTest, OpensTheLeaseReadsItsRegionsAndReleasesIt) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const std::string token = lease({3, 4, 9}, 40, 0x1234);
  const KvPullResult o = open(*consumer, 77, token);
  ASSERT_EQ(o.error, KvPullError::kNone) << o.message;
  ASSERT_EQ(o.stage, KvPullResult::Stage::kOpened);
  EXPECT_EQ(o.lease.num_tokens, 40);  // what the producer attests its lease holds
  EXPECT_EQ(o.lease.prompt_hash, 0x1234u);
  EXPECT_EQ(o.lease.num_blocks, 3u);
  // Lease positions 0..2 (producer blocks 3, 4, 9) into consumer blocks 5, 6, 1.
  const KvPullResult r = read(*consumer, 77, {{0, 5, 2}, {2, 1, 1}});
  ASSERT_EQ(r.error, KvPullError::kNone) << r.message;
  ASSERT_EQ(r.stage, KvPullResult::Stage::kDone);
  EXPECT_EQ(r.bytes, 3 * (kKBytes + kScaleBytes));
  const std::pair<int, int> copied[] = {{3, 5}, {4, 6}, {9, 1}};  // producer block -> consumer
  for (size_t a = 0; a < 2; ++a) {
    const size_t bb = producer_cache.arrays[a].block_bytes;
    for (int b = 0; b < kBlocks; ++b) {
      int from = -1;
      for (auto [p, c] : copied) from = c == b ? p : from;
      if (from < 0) {
        EXPECT_EQ(std::vector<uint8_t>(consumer_cache.block(a, b), consumer_cache.block(a, b) + bb),
                  std::vector<uint8_t>(bb, 0))
            << "block " << b << " was not pulled";
      } else {
        EXPECT_EQ(0, std::memcmp(consumer_cache.block(a, b), producer_cache.block(a, from), bb))
            << "array " << a << " block " << b;
      }
    }
  }
  const auto ended = leases.take_ended(Clock::now());
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_FALSE(ended[0].expired);
  EXPECT_GE(producer_wakes.load(), 1);
}

TEST_P(UcxTransportTest, OtherLayoutIsRefusedBeforeAnyByteMoves) {
  auto consumer = make_consumer(/*block_size=*/32);
  ASSERT_NE(consumer, nullptr);
  const std::string token = lease({3});
  const KvPullResult r = open(*consumer, 1, token);
  EXPECT_EQ(r.error, KvPullError::kLayout);
  EXPECT_NE(r.message.find("block_size 16 != 32"), std::string::npos) << r.message;
  EXPECT_TRUE(consumer_cache.untouched());
  EXPECT_EQ(leases.num_leases(), 1);  // the lease is not released by a refused pull
  EXPECT_TRUE(leases.take_ended(Clock::now()).empty());
  // But the consumer of another layout can let it go at once (a refused handoff).
  consumer->reject("127.0.0.1", producer->port(), token);
  const std::vector<KvLeaseTable::Ended> ended = wait_ended();
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_FALSE(ended[0].expired);
}

TEST_P(UcxTransportTest, EndedOrGuessedLeaseIsRefusedAtOpen) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const std::string ended = lease({2}, 40, 1, std::chrono::milliseconds(0));
  ASSERT_EQ(leases.take_ended(Clock::now() + std::chrono::seconds(1)).size(), 1u);  // expired
  KvPullResult r = open(*consumer, 1, ended);
  EXPECT_EQ(r.error, KvPullError::kLease) << r.message;
  EXPECT_EQ(r.stage, KvPullResult::Stage::kDone);
  // Another user's lease (live) under a token of the same shape but not its own.
  const std::string victim = lease({5, 6});
  std::string guess = victim;
  guess[31] = guess[31] == '0' ? '1' : '0';
  r = open(*consumer, 2, guess);
  EXPECT_EQ(r.error, KvPullError::kLease) << r.message;
  EXPECT_TRUE(consumer_cache.untouched());
  EXPECT_EQ(leases.num_leases(), 1);  // the victim's lease is untouched
}

// Issue 51: the producer served any peer; a consumer without the deployment's secret gets no
// lease, no byte, and cannot release anyone's lease.
TEST_P(UcxTransportTest, ConsumerWithoutTheSecretGetsNothing) {
  auto rogue = make_consumer(16, "some-other-secret-0123456789");
  ASSERT_NE(rogue, nullptr);
  const std::string token = lease({3, 4});
  const KvPullResult r = open(*rogue, 1, token);
  EXPECT_EQ(r.error, KvPullError::kAuth) << r.message;
  rogue->reject("127.0.0.1", producer->port(), token);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(consumer_cache.untouched());
  EXPECT_TRUE(leases.find(token, Clock::now()).has_value());  // still pinned for its consumer
}

// Issue 51: block ids near 2^31 crashed the producer; ids past the cache read its other memory.
// Reads are of lease positions inside the regions the producer described, nothing else.
TEST_P(UcxTransportTest, RunOutsideTheLeaseIsRefusedWithNothingRead) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const std::string token = lease({3, 4});
  ASSERT_EQ(open(*consumer, 5, token).error, KvPullError::kNone);
  const KvPullResult r = read(*consumer, 5, {{1, 0, 2}});  // positions 1 and 2 of a 2-block lease
  EXPECT_EQ(r.error, KvPullError::kTransfer);
  EXPECT_NE(r.message.find("outside the lease"), std::string::npos) << r.message;
  EXPECT_TRUE(consumer_cache.untouched());
  ASSERT_EQ(open(*consumer, 6, lease({7})).error, KvPullError::kNone);
  const KvPullResult big = read(*consumer, 6, {{0x7fffff00, 0, 1}});
  EXPECT_EQ(big.error, KvPullError::kTransfer);
  EXPECT_TRUE(consumer_cache.untouched());
}

TEST_P(UcxTransportTest, NoProducerIsAConnectFailureOrTimeout) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const int32_t port = producer->port();
  producer.reset();  // nobody listens there any more
  const KvPullResult r = open(*consumer, 1, "0123456789abcdef0123456789abcdef", port, 3);
  EXPECT_TRUE(r.error == KvPullError::kConnect || r.error == KvPullError::kTimeout)
      << kv_pull_error_name(r.error) << ": " << r.message;
  EXPECT_TRUE(consumer_cache.untouched());
}

TEST_P(UcxTransportTest, RejectReleasesTheProducersLease) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const std::string token = lease({5, 6});
  consumer->reject("127.0.0.1", producer->port(), token);
  const std::vector<KvLeaseTable::Ended> ended = wait_ended();
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_FALSE(ended[0].expired);
  EXPECT_TRUE(consumer->take_results().empty());  // a reject reports nothing
  EXPECT_GE(producer_wakes.load(), 1);
}

// Issue 51 (transfer speed): one connection per pull. Now every pull to a producer, one after
// another or several at once, shares one connection.
TEST_P(UcxTransportTest, PullsShareOneConnectionPerProducer) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  ASSERT_EQ(open(*consumer, 1, lease({1})).error, KvPullError::kNone);
  ASSERT_EQ(read(*consumer, 1, {{0, 1, 1}}).error, KvPullError::kNone);
  const std::string a = lease({2}), b = lease({3}), c = lease({4});
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  consumer->open({2, "127.0.0.1", producer->port(), a, deadline});
  consumer->open({3, "127.0.0.1", producer->port(), b, deadline});
  consumer->open({4, "127.0.0.1", producer->port(), c, deadline});
  for (const KvPullResult& r : collect(*consumer, 3)) {
    ASSERT_EQ(r.error, KvPullError::kNone) << r.message;
    EXPECT_EQ(r.stage, KvPullResult::Stage::kOpened);
  }
  for (uint64_t id : {2, 3, 4}) {
    consumer->read({id, {{0, static_cast<int32_t>(id), 1}}, deadline});
  }
  for (const KvPullResult& r : collect(*consumer, 3)) {
    EXPECT_EQ(r.error, KvPullError::kNone) << r.message;
    EXPECT_EQ(r.stage, KvPullResult::Stage::kDone);
  }
  for (int b : {2, 3, 4}) {
    EXPECT_EQ(0, std::memcmp(consumer_cache.block(0, b), producer_cache.block(0, b), kKBytes));
  }
  EXPECT_EQ(producer->connections_accepted(), 1u);
}

// Issue 51: a port that accepts and hangs held the consumer's blocks and a slot for the pull
// timeout. The open gives up at its own (short) deadline, before any block is involved.
TEST_P(UcxTransportTest, PeerThatAcceptsAndHangsCostsOnlyTheOpenDeadline) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const KvPullResult r =
      open(*consumer, 9, "0123456789abcdef0123456789abcdef", ntohs(addr.sin_port), 0.5);
  EXPECT_TRUE(r.error == KvPullError::kTimeout || r.error == KvPullError::kConnect)
      << kv_pull_error_name(r.error) << ": " << r.message;
  EXPECT_TRUE(consumer_cache.untouched());
  ::close(fd);
}

TEST_P(UcxTransportTest, ProducerRefusesAddressesOutsideItsPeers) {
  producer = make_producer({"10.254.254.254"});
  ASSERT_NE(producer, nullptr);
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const KvPullResult r = open(*consumer, 1, lease({3}), 0, 3);
  EXPECT_TRUE(r.error == KvPullError::kConnect || r.error == KvPullError::kTimeout)
      << kv_pull_error_name(r.error) << ": " << r.message;
  EXPECT_EQ(producer->connections_accepted(), 0u);
  EXPECT_TRUE(consumer_cache.untouched());
}

// The TCP sockets this process listens on, as "address:port" (from /proc/net/tcp and the
// process's own socket inodes).
std::set<std::string> own_listening_sockets() {
  std::set<std::string> inodes;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char target[256] = {};
      const std::string path = std::string("/proc/self/fd/") + e->d_name;
      const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      const std::string t(target, static_cast<size_t>(n));
      if (t.rfind("socket:[", 0) == 0) inodes.insert(t.substr(8, t.size() - 9));
    }
    closedir(d);
  }
  std::set<std::string> out;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream s(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      s >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (state != "0A" || inodes.count(inode) == 0) continue;
      out.insert(std::string(file == std::string("/proc/net/tcp6") ? "v6:" : "") + local);
    }
  }
  return out;
}

// Issue 51: UCX listened on the external interface whatever kv_transfer.host said. With its
// devices limited to the host's interface, every socket it listens on is on 127.0.0.1.
TEST_P(UcxTransportTest, ListensOnlyOnTheConfiguredInterface) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  ASSERT_EQ(open(*consumer, 1, lease({1})).error, KvPullError::kNone);
  const std::set<std::string> socks = own_listening_sockets();
  EXPECT_FALSE(socks.empty());
  for (const std::string& s : socks) {
    EXPECT_EQ(s.substr(0, 9), "0100007F:") << "a listening socket on " << s;  // 127.0.0.1
  }
  EXPECT_EQ(kv_interface_of("127.0.0.1"), "lo");
  EXPECT_EQ(kv_interface_of("0.0.0.0"), "");
}

// Issue 51: a restart right after the producer ended failed for ~60 s (the port in TIME_WAIT).
TEST_P(UcxTransportTest, RestartsOnTheSamePortRightAfterItsConnectionsClosed) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const std::string token = lease({3});
  ASSERT_EQ(open(*consumer, 1, token).error, KvPullError::kNone);
  ASSERT_EQ(read(*consumer, 1, {{0, 3, 1}}).error, KvPullError::kNone);
  const int32_t port = producer->port();
  producer.reset();  // closes its accepted connection first: that side holds TIME_WAIT
  producer = make_producer({}, port);
  ASSERT_NE(producer, nullptr);
  EXPECT_EQ(producer->port(), port);
}

INSTANTIATE_TEST_SUITE_P(Tls, UcxTransportTest, ::testing::Values("tcp", "shm,tcp"),
                         [](const auto& info) {
                           return std::string(info.param) == "tcp" ? "tcp" : "shm";
                         });

}  // namespace
}  // namespace llmserve
