// Two UcxTransports in one process on loopback (each its own UCP context and worker, as two
// daemons have): a consumer pulls block runs of a producer's memory by RMA read, the release
// ends the producer's lease, and every failure is reported with nothing written (layout refused
// in the handshake) or with its reason. Run over UCX's TCP and shared-memory transports.
#include "engine/kv_transfer/ucx_transport.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBlocks = 16;
constexpr uint64_t kKBytes = 256, kScaleBytes = 16;  // one block of each array

struct Cache {
  std::vector<uint8_t> mem = std::vector<uint8_t>(kBlocks * (kKBytes + kScaleBytes), 0);
  std::vector<KvArraySpan> arrays{{0, kKBytes}, {kBlocks * kKBytes, kScaleBytes}};
  uint8_t* block(size_t array, int b) {
    return mem.data() + arrays[array].offset + b * arrays[array].block_bytes;
  }
};

KvLayout layout_of(const Cache& c, int32_t block_size = 16) {
  KvLayout l{"m", block_size, "int8", 1, 2, 64, {}};
  for (const auto& a : c.arrays) l.array_block_bytes.push_back(a.block_bytes);
  return l;
}

class UcxTransportTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    setenv("UCX_TLS", GetParam(), 1);
    for (size_t i = 0; i < producer_cache.mem.size(); ++i) {
      producer_cache.mem[i] = static_cast<uint8_t>(i * 7 + 3);
    }
    UcxTransportOptions p;
    p.listen = true;
    p.listen_host = "127.0.0.1";
    p.listen_port = 0;
    p.layout = layout_of(producer_cache);
    p.base = producer_cache.mem.data();
    p.bytes = producer_cache.mem.size();
    p.arrays = producer_cache.arrays;
    p.leases = &leases;
    p.on_result = [this] { ++producer_wakes; };
    auto prod = UcxTransport::create(std::move(p));
    ASSERT_TRUE(prod.is_ok()) << prod.status().message();
    producer = std::move(prod).value();
    ASSERT_GT(producer->port(), 0);
  }

  std::unique_ptr<UcxTransport> make_consumer(int32_t block_size = 16) {
    UcxTransportOptions c;
    c.layout = layout_of(consumer_cache, block_size);
    c.base = consumer_cache.mem.data();
    c.bytes = consumer_cache.mem.size();
    c.arrays = consumer_cache.arrays;
    auto t = UcxTransport::create(std::move(c));
    EXPECT_TRUE(t.is_ok()) << t.status().message();
    return t.is_ok() ? std::move(t).value() : nullptr;
  }

  KvPullResult pull(UcxTransport& c, std::vector<KvBlockRun> runs, const std::string& lease,
                    int32_t port = 0, double timeout_s = 10) {
    KvPullJob job;
    job.id = 77;
    job.host = "127.0.0.1";
    job.port = port != 0 ? port : producer->port();
    job.lease_id = lease;
    job.runs = std::move(runs);
    job.deadline = Clock::now() + std::chrono::milliseconds(static_cast<int>(timeout_s * 1000));
    c.pull(std::move(job));
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < until) {
      auto r = c.take_results();
      if (!r.empty()) return r.front();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ADD_FAILURE() << "no result";
    return {};
  }

  Cache producer_cache, consumer_cache;
  KvLeaseTable leases{"prod"};
  std::atomic<int> producer_wakes{0};  // the engine is woken to unpin released leases
  std::unique_ptr<UcxTransport> producer;
};

TEST_P(UcxTransportTest, PullsBlockRunsOfEveryArrayAndReleasesTheLease) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const std::string lease = leases.add({3, 4, 9}, Clock::now() + std::chrono::seconds(60));
  const KvPullResult r = pull(*consumer, {{3, 5, 2}, {9, 1, 1}}, lease);
  ASSERT_EQ(r.error, KvPullError::kNone) << r.message;
  EXPECT_EQ(r.id, 77u);
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
}

TEST_P(UcxTransportTest, OtherLayoutIsRefusedBeforeAnyByteMoves) {
  auto consumer = make_consumer(/*block_size=*/32);
  ASSERT_NE(consumer, nullptr);
  const std::string lease = leases.add({3}, Clock::now() + std::chrono::seconds(60));
  const KvPullResult r = pull(*consumer, {{3, 3, 1}}, lease);
  EXPECT_EQ(r.error, KvPullError::kLayout);
  EXPECT_NE(r.message.find("block_size 16 != 32"), std::string::npos) << r.message;
  EXPECT_EQ(consumer_cache.mem, std::vector<uint8_t>(consumer_cache.mem.size(), 0));
  EXPECT_EQ(leases.num_leases(), 1);  // the lease is not released by a refused pull
}

TEST_P(UcxTransportTest, EndedLeaseMakesThePullFail) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const std::string lease = leases.add({2}, Clock::now());
  ASSERT_EQ(leases.take_ended(Clock::now() + std::chrono::seconds(1)).size(), 1u);  // expired
  const KvPullResult r = pull(*consumer, {{2, 2, 1}}, lease);
  EXPECT_EQ(r.error, KvPullError::kLease) << r.message;
}

TEST_P(UcxTransportTest, NoProducerIsAConnectFailureOrTimeout) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const int32_t port = producer->port();
  producer.reset();  // nobody listens there any more
  const KvPullResult r = pull(*consumer, {{1, 1, 1}}, "prod-1", port, 3);
  EXPECT_TRUE(r.error == KvPullError::kConnect || r.error == KvPullError::kTimeout)
      << kv_pull_error_name(r.error) << ": " << r.message;
  EXPECT_EQ(consumer_cache.mem, std::vector<uint8_t>(consumer_cache.mem.size(), 0));
}

TEST_P(UcxTransportTest, RejectReleasesTheProducersLease) {
  auto consumer = make_consumer();
  ASSERT_NE(consumer, nullptr);
  const std::string lease = leases.add({5, 6}, Clock::now() + std::chrono::seconds(60));
  consumer->reject("127.0.0.1", producer->port(), lease);
  const auto until = Clock::now() + std::chrono::seconds(10);
  std::vector<KvLeaseTable::Ended> ended;
  while (ended.empty() && Clock::now() < until) {
    ended = leases.take_ended(Clock::now());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_FALSE(ended[0].expired);
  EXPECT_TRUE(consumer->take_results().empty());  // a reject reports nothing
  EXPECT_GE(producer_wakes.load(), 1);
}

INSTANTIATE_TEST_SUITE_P(Tls, UcxTransportTest, ::testing::Values("tcp", "shm,tcp"),
                         [](const auto& info) {
                           return std::string(info.param) == "tcp" ? "tcp" : "shm";
                         });

}  // namespace
}  // namespace llmserve
