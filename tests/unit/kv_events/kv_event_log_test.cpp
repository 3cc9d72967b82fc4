#include "engine/kv_events/kv_event_log.h"

#include <vector>

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using Ids = std::vector<int32_t>;
using Hashes = std::vector<uint64_t>;

TEST(KvEventLog, DisabledRecordsNothing) {
  KvEventLog log;
  log.stored(7, std::nullopt, Ids{1, 2}, 2);
  log.removed(7);
  log.cleared();
  EXPECT_TRUE(log.empty());
  EXPECT_TRUE(log.take().empty());
}

TEST(KvEventLog, ChainedStoresMergeIntoOneEventAndBreaksStartANewOne) {
  KvEventLog log;
  log.set_enabled(true);
  log.stored(10, std::nullopt, Ids{1, 2}, 2);
  log.stored(11, 10, Ids{3, 4}, 2);
  log.stored(12, 11, Ids{5, 6}, 2);
  log.stored(20, 99, Ids{7, 8}, 2);  // parent is not the last hash: a new chain
  log.stored(21, 20, Ids{9, 9}, 2);
  const std::vector<KvEvent> events = log.take();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(std::get<KvBlockStored>(events[0]),
            (KvBlockStored{Hashes{10, 11, 12}, std::nullopt, Ids{1, 2, 3, 4, 5, 6}, 2, {}}));
  EXPECT_EQ(std::get<KvBlockStored>(events[1]),
            (KvBlockStored{Hashes{20, 21}, 99, Ids{7, 8, 9, 9}, 2, {}}));
  EXPECT_TRUE(log.empty());
}

TEST(KvEventLog, ATiersEventsCarryItsMediumAndNeverMergeWithThePools) {
  KvEventLog log;
  log.set_enabled(true);
  log.stored(10, std::nullopt, Ids{1, 2}, 2);
  log.stored(11, 10, Ids{3, 4}, 2, "DISK");  // the same chain, but on disk: its own event
  log.stored(12, 11, Ids{5, 6}, 2, "DISK");
  log.removed(10);
  log.removed(30, "DISK");
  log.removed(31, "DISK");
  const std::vector<KvEvent> events = log.take();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(std::get<KvBlockStored>(events[0]).medium, "");
  EXPECT_EQ(std::get<KvBlockStored>(events[1]),
            (KvBlockStored{Hashes{11, 12}, 10, Ids{3, 4, 5, 6}, 2, "DISK"}));
  EXPECT_EQ(std::get<KvBlockRemoved>(events[2]), (KvBlockRemoved{Hashes{10}, ""}));
  EXPECT_EQ(std::get<KvBlockRemoved>(events[3]), (KvBlockRemoved{Hashes{30, 31}, "DISK"}));
}

TEST(KvEventLog, OrderIsKeptAcrossKindsAndRemovalsMerge) {
  KvEventLog log;
  log.set_enabled(true);
  log.stored(1, std::nullopt, Ids{1}, 1);
  log.removed(5);
  log.removed(6);
  log.stored(2, 1, Ids{2}, 1);  // after a removal: not merged into the first store
  log.cleared();
  log.removed(2);
  const std::vector<KvEvent> events = log.take();
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(std::get<KvBlockStored>(events[0]).block_hashes, Hashes{1});
  EXPECT_EQ(std::get<KvBlockRemoved>(events[1]).block_hashes, (Hashes{5, 6}));
  EXPECT_EQ(std::get<KvBlockStored>(events[2]),
            (KvBlockStored{Hashes{2}, uint64_t{1}, Ids{2}, 1, {}}));
  EXPECT_TRUE(std::holds_alternative<KvAllBlocksCleared>(events[3]));
  EXPECT_EQ(std::get<KvBlockRemoved>(events[4]).block_hashes, Hashes{2});
}

}  // namespace
}  // namespace llmserve
