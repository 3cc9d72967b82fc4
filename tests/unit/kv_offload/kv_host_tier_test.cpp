// The host-memory tier, alone and above the disk tier: pages come back byte for byte from host
// memory, the tier keeps its byte budget by demoting least-recently-used pages to disk, a
// restart finds what the host tier held (written to disk at shutdown), a page in use by a
// restore is never evicted, and a colliding hash restores nothing from host memory either.
#include "engine/kv_offload/kv_host_tier.h"

#include <cstring>

#include "offloader_fixture.h"

namespace llmserve {
namespace {

using offload_test::Fixture;
using offload_test::kConvA;
using offload_test::kConvB;

// Bytes one page of block index i (0-based) charges: header, (i + 1) blocks of ids, 40 bytes.
constexpr int64_t page_charge(int i) {
  return 112 + 16 * (i + 1) + 40;
}

std::vector<int32_t> conversation(int32_t first, int32_t n) {
  std::vector<int32_t> t;
  for (int32_t i = 0; i < n; ++i) t.push_back(first + i);
  return t;
}

TEST_F(Fixture, HostTierAloneBringsBackTheBytesItCopied) {
  auto o = make(/*disk_bytes=*/0, /*host_bytes=*/4096);
  twin.fill(1, 100);
  twin.fill(2, 150);
  const auto want1 = block_bytes(1), want2 = block_bytes(2);
  store_chain(*o, kConvA, "", 1, 2);
  EXPECT_EQ(o->take_copied(), (std::vector<int32_t>{1, 2}));
  const auto events = o->take_events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(events[0].stored);
  EXPECT_STREQ(events[0].medium, "CPU");  // vLLM's name of its CPU offloading medium
  EXPECT_EQ(events[1].tokens, (std::vector<int32_t>{14, 15, 16, 17}));
  EXPECT_EQ(o->stats().host.pages, 2);
  EXPECT_EQ(o->stats().host.bytes, page_charge(0) + page_charge(1));
  EXPECT_TRUE(o->on_tier(chain(kConvA, "")[1]));
  EXPECT_FALSE(o->wants(chain(kConvA, "")[0]));
  // The pool's blocks are reused for something else: the tier kept its own copy.
  twin.fill(1, 7);
  twin.fill(2, 9);
  const auto r = restore(*o, kConvA, chain(kConvA, ""), "");
  ASSERT_EQ(r.pages.size(), 2u);
  EXPECT_EQ(r.from_host, 2);
  EXPECT_EQ(r.pages[0], want1);
  EXPECT_EQ(r.pages[1], want2);
  EXPECT_EQ(o->stats().host_hits, 2);
  EXPECT_EQ(o->stats().disk_hits, 0);
}

TEST_F(Fixture, AFullHostTierDemotesItsLeastRecentlyUsedPagesToDisk) {
  // Room for two pages of this chain's blocks; four are stored.
  auto o = make(/*disk_bytes=*/1 << 20, /*host_bytes=*/page_charge(2) + page_charge(3));
  const auto conv = conversation(30, 17);
  std::vector<std::vector<std::byte>> want;
  for (int32_t b = 0; b < 4; ++b) {
    twin.fill(1 + b, static_cast<uint8_t>(40 * b + 3));
    want.push_back(block_bytes(1 + b));
  }
  store_chain(*o, conv, "", 1, 4);
  const auto s = o->stats();
  EXPECT_LE(s.host.bytes, page_charge(2) + page_charge(3));
  EXPECT_EQ(s.host.pages, 2);
  EXPECT_EQ(s.demoted_pages, 2);
  EXPECT_EQ(s.disk.pages, 2);
  int cpu_removed = 0, disk_stored = 0;
  for (const KvTierEvent& e : o->take_events()) {
    cpu_removed += !e.stored && std::string(e.medium) == "CPU";
    disk_stored += e.stored && std::string(e.medium) == "DISK";
  }
  EXPECT_EQ(cpu_removed, 2);
  EXPECT_EQ(disk_stored, 2);
  // Every page is on one tier or the other, and the whole chain comes back byte for byte.
  for (const BlockHash& h : chain(conv, "")) EXPECT_TRUE(o->on_tier(h));
  for (int32_t b = 0; b < 4; ++b) twin.fill(1 + b, 0);
  const auto r = restore(*o, conv, chain(conv, ""), "");
  ASSERT_EQ(r.pages.size(), 4u);
  for (size_t b = 0; b < 4; ++b) EXPECT_EQ(r.pages[b], want[b]) << "block " << b;
  EXPECT_EQ(r.from_host, 2);
  EXPECT_EQ(o->stats().host_hits, 2);
  EXPECT_EQ(o->stats().disk_hits, 2);
}

TEST_F(Fixture, HostPagesAreWrittenToDiskAtShutdownAndFoundAfterARestart) {
  twin.fill(1, 11);
  twin.fill(2, 22);
  const auto want1 = block_bytes(1), want2 = block_bytes(2);
  {
    auto o = make(/*disk_bytes=*/1 << 20, /*host_bytes=*/4096);
    store_chain(*o, kConvA, "", 1, 2);
    EXPECT_EQ(o->stats().host.pages, 2);
    EXPECT_EQ(o->stats().disk.pages, 0);  // write-back: disk gets only what host memory lets go
  }
  auto o = make(/*disk_bytes=*/1 << 20, /*host_bytes=*/4096);
  EXPECT_EQ(o->stats().disk.loaded_pages, 2);
  const auto r = restore(*o, kConvA, chain(kConvA, ""), "");
  ASSERT_EQ(r.pages.size(), 2u);
  EXPECT_EQ(r.from_host, 0);
  EXPECT_EQ(r.pages[0], want1);
  EXPECT_EQ(r.pages[1], want2);
}

TEST_F(Fixture, ForcedHashCollisionRestoresNothingFromHostMemory) {
  auto o = make(/*disk_bytes=*/0, /*host_bytes=*/4096);
  store_chain(*o, kConvA, "", 1, 2);
  const auto r = restore(*o, kConvB, chain(kConvA, ""), "");
  EXPECT_TRUE(r.pages.empty());
  EXPECT_EQ(o->stats().rejected_pages, 1);
  EXPECT_TRUE(restore(*o, kConvA, chain(kConvA, ""), "tenant-b").pages.empty());
  EXPECT_EQ(o->stats().host_hits, 0);
}

KvPageHeader header(uint64_t hash, uint64_t parent) {
  KvPageHeader h;
  h.block_size = 4;
  h.hash = {hash, 0};
  h.parent = {parent, 0};
  return h;
}

TEST(KvHostTier, APageInUseIsNeverEvictedAndTheBudgetIsChecked) {
  offload_test::HostTwin twin;
  KvHostBlockIo io(twin.memory());
  const auto small = KvHostTier::create(100, io.block_bytes(), io);
  ASSERT_FALSE(small.is_ok());
  EXPECT_NE(small.status().message().find("kv_offload.host_bytes"), std::string::npos);

  auto tier = KvHostTier::create(page_charge(0) + 10, io.block_bytes(), io);  // one page
  ASSERT_TRUE(tier.is_ok());
  KvHostTier& t = **tier;
  const std::vector<int32_t> ids = {1, 2, 3, 4};
  std::vector<KvHostPage> evicted;
  std::byte* p = t.reserve(header(1, 0), ids, evicted);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(t.contains({1, 0}));  // not before commit
  std::memset(p, 0x5a, io.block_bytes());
  t.commit({1, 0});
  ASSERT_TRUE(t.acquire({1, 0}).has_value());
  // Page 1 is in use (a restore copies from it): page 2 finds no room and is refused.
  EXPECT_EQ(t.reserve(header(2, 0), ids, evicted), nullptr);
  EXPECT_TRUE(evicted.empty());
  EXPECT_EQ(t.stats().full_refusals, 1);
  t.release({1, 0});
  ASSERT_NE(t.reserve(header(2, 0), ids, evicted), nullptr);
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].header.hash, (BlockHash{1, 0}));
  EXPECT_EQ(evicted[0].tokens, ids);
  EXPECT_EQ(evicted[0].payload, std::vector<std::byte>(io.block_bytes(), std::byte{0x5a}));
  t.commit({2, 0});
  EXPECT_FALSE(t.contains({1, 0}));
  EXPECT_TRUE(t.contains({2, 0}));
  EXPECT_EQ(t.stats().evicted_pages, 1);
}

}  // namespace
}  // namespace llmserve
