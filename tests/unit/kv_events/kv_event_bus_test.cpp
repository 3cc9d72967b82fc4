#include "engine/kv_events/kv_event_bus.h"

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using std::chrono::milliseconds;

std::vector<KvEvent> removed(uint64_t hash) {
  return {KvBlockRemoved{{hash}, {}}};
}

std::vector<uint64_t> seqs(const KvEventRead& r) {
  std::vector<uint64_t> out;
  for (const auto& b : r.batches) out.push_back(b->sequence_number);
  return out;
}

TEST(KvEventBus, NumbersBatchesFromZeroAndSkipsEmptyOnes) {
  KvEventBus bus(8);
  EXPECT_EQ(bus.publish(removed(1), 1.5), 0u);
  EXPECT_EQ(bus.publish({}, 2.0), 1u);  // skipped: the next number is still 1
  EXPECT_EQ(bus.publish(removed(2), 2.5), 1u);
  EXPECT_EQ(bus.next_sequence_number(), 2u);
  auto sub = bus.subscribe(0);
  const KvEventRead r = sub->next(16, milliseconds(0));
  EXPECT_EQ(seqs(r), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(r.batches[1]->timestamp, 2.5);
  EXPECT_EQ(std::get<KvBlockRemoved>(r.batches[1]->events[0]).block_hashes,
            std::vector<uint64_t>{2});
  EXPECT_EQ(r.missed, 0u);
  EXPECT_FALSE(r.closed);
}

TEST(KvEventBus, ReadsRespectMaxBatchesAndStartInTheFuture) {
  KvEventBus bus(8);
  for (uint64_t i = 0; i < 5; ++i) bus.publish(removed(i + 1), 0);
  auto late = bus.subscribe(1000);  // beyond the newest: only what comes next
  EXPECT_TRUE(late->next(4, milliseconds(0)).batches.empty());
  bus.publish(removed(9), 0);
  EXPECT_EQ(seqs(late->next(4, milliseconds(0))), (std::vector<uint64_t>{5}));

  auto sub = bus.subscribe(2);
  EXPECT_EQ(seqs(sub->next(2, milliseconds(0))), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(seqs(sub->next(2, milliseconds(0))), (std::vector<uint64_t>{4, 5}));
  EXPECT_EQ(sub->cursor(), 6u);
}

TEST(KvEventBus, ALaggingReaderLosesTheOldestAndTheBusCountsThem) {
  KvEventBus bus(3);
  auto sub = bus.subscribe(0);
  for (uint64_t i = 0; i < 7; ++i) bus.publish(removed(i + 1), 0);  // ring keeps 4, 5, 6
  const KvEventRead r = sub->next(16, milliseconds(0));
  EXPECT_EQ(r.missed, 4u);
  EXPECT_EQ(seqs(r), (std::vector<uint64_t>{4, 5, 6}));
  EXPECT_EQ(bus.batches_dropped(), 4u);
  EXPECT_EQ(bus.batches_published(), 7u);

  // Asking for history the ring no longer holds is reported, not counted as dropped.
  auto replay = bus.subscribe(1);
  const KvEventRead h = replay->next(16, milliseconds(0));
  EXPECT_EQ(h.missed, 3u);
  EXPECT_EQ(seqs(h), (std::vector<uint64_t>{4, 5, 6}));
  EXPECT_EQ(bus.batches_dropped(), 4u);

  std::vector<uint64_t> buffered;
  for (const auto& b : bus.buffered_since(5)) buffered.push_back(b->sequence_number);
  EXPECT_EQ(buffered, (std::vector<uint64_t>{5, 6}));
}

TEST(KvEventBus, WaitingReaderWakesOnPublishCancelAndClose) {
  KvEventBus bus(4);
  auto sub = bus.subscribe(0);
  std::thread producer([&] {
    std::this_thread::sleep_for(milliseconds(50));
    bus.publish(removed(1), 0);
  });
  const KvEventRead r = sub->next(1, milliseconds(10000));
  producer.join();
  EXPECT_EQ(seqs(r), (std::vector<uint64_t>{0}));

  auto other = bus.subscribe(0);
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(50));
    other->cancel();
  });
  const auto t0 = std::chrono::steady_clock::now();
  other->next(1, milliseconds(0));  // drain batch 0
  EXPECT_TRUE(other->next(1, milliseconds(10000)).closed);
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));

  EXPECT_EQ(bus.num_subscribers(), 2u);
  std::thread closer([&] {
    std::this_thread::sleep_for(milliseconds(50));
    bus.close();
  });
  EXPECT_TRUE(sub->next(1, milliseconds(10000)).closed);
  closer.join();
  EXPECT_EQ(bus.publish(removed(2), 0), 1u);  // closed: dropped
  EXPECT_EQ(bus.next_sequence_number(), 1u);
}

TEST(KvEventBus, SubscriptionOutlivesTheBus) {
  std::unique_ptr<KvEventSubscription> sub;
  {
    KvEventBus bus(2);
    sub = bus.subscribe(0);
  }
  EXPECT_TRUE(sub->next(1, milliseconds(0)).closed);
}

// listen(): the wake-up a one-thread reader of many subscriptions sleeps on (gRPC
// SubscribeKvEvents' fanout).
TEST(KvEventBus, ListenersAreWokenByPublishAndCloseUntilUnregistered) {
  std::unique_ptr<KvEventListener> outliving;
  int outliving_calls = 0;
  {
    KvEventBus bus(4);
    int calls = 0;
    auto listener = bus.listen([&] { ++calls; });
    outliving = bus.listen([&] { ++outliving_calls; });
    bus.publish(removed(1), 0);
    EXPECT_EQ(calls, 1);
    bus.publish({}, 0);  // empty: no batch, no wake-up
    EXPECT_EQ(calls, 1);
    listener.reset();
    bus.publish(removed(2), 0);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(outliving_calls, 2);
    bus.close();
    EXPECT_EQ(outliving_calls, 3);
  }
  outliving.reset();  // after the bus: still safe
  EXPECT_EQ(outliving_calls, 3);
}

}  // namespace
}  // namespace llmserve
