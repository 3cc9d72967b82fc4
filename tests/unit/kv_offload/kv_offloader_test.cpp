// The offloader's worker over a host twin of a KV cache with the disk tier: write-behind copies
// a pinned block out and writes it, read-ahead brings back exactly its bytes, and a page found by
// a colliding hash is never restored into another conversation.
#include "offloader_fixture.h"

namespace llmserve {
namespace {

using offload_test::Fixture;
using offload_test::kConvA;
using offload_test::kConvB;
using offload_test::kBs;

TEST_F(Fixture, WriteBehindThenReadAheadBringsBackTheSameBytes) {
  auto o = make();
  twin.fill(1, 100);
  twin.fill(2, 150);
  store_chain(*o, kConvA, "", 1, 2);
  const auto copied = o->take_copied();
  EXPECT_EQ(copied, (std::vector<int32_t>{1, 2}));  // returned for unpinning
  const auto events = o->take_events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(events[0].stored);
  EXPECT_EQ(events[1].tokens, (std::vector<int32_t>{14, 15, 16, 17}));
  EXPECT_EQ(o->stats().disk.pages, 2);
  EXPECT_FALSE(o->wants(chain(kConvA, "")[0]));  // on disk already

  const auto r = restore(*o, kConvA, chain(kConvA, ""), "");
  ASSERT_EQ(r.pages.size(), 2u);
  EXPECT_EQ(r.pages[1], block_bytes(2));
  // Copied into another block, the bytes land in every array.
  KvHostBlockIo io(twin.memory());
  ASSERT_TRUE(io.copy_in(5, r.pages[0]).is_ok());
  EXPECT_EQ(block_bytes(1), block_bytes(5));
  EXPECT_EQ(o->stats().disk_hits, 2);
}

TEST_F(Fixture, ForcedHashCollisionNeverRestoresAnotherConversation) {
  auto o = make();
  twin.fill(1, 1);
  twin.fill(2, 2);
  store_chain(*o, kConvA, "", 1, 2);
  // Conversation B's lookup is made to collide: its blocks carry A's hashes (a hash alone would
  // find A's pages). The stored token ids differ, so nothing is restored.
  const auto r = restore(*o, kConvB, chain(kConvA, ""), "");
  EXPECT_TRUE(r.pages.empty());
  EXPECT_EQ(o->stats().rejected_pages, 1);
  EXPECT_EQ(o->stats().disk_hits, 0);
  // The same prompt under another tenant's salt: its hashes differ, and forced to A's, the salt
  // digest stored with the page refuses it.
  EXPECT_TRUE(restore(*o, kConvA, chain(kConvA, ""), "tenant-b").pages.empty());
  EXPECT_TRUE(restore(*o, kConvA, chain(kConvA, "tenant-b"), "tenant-b").pages.empty());
  // A shares a first block with a conversation that parts after it: one block comes back.
  std::vector<int32_t> c = kConvA;
  c[5] = 99;
  const auto rc = restore(*o, c, chain(kConvA, ""), "");
  EXPECT_EQ(rc.pages.size(), 1u);
}

TEST_F(Fixture, AnotherFingerprintIsNeverRestored) {
  {
    auto o = make();
    twin.fill(1, 1);
    store_chain(*o, kConvA, "", 1, 1);
  }
  fp = kv_fingerprint({"w", "cpu", "", "f16", kBs, 1, 1, 8, {32, 8}, "theta=1"});
  auto o = make();
  EXPECT_EQ(o->stats().disk.foreign_pages, 1);
  EXPECT_FALSE(o->on_tier(chain(kConvA, "")[0]));
  EXPECT_TRUE(restore(*o, kConvA, chain(kConvA, ""), "").pages.empty());
}

TEST(KvFingerprint, EveryInputCounts) {
  const KvFingerprintInputs base{"w", "cpu", "q8", "f16", 16, 30, 3, 64, {1, 2}, "theta=1"};
  const BlockHash d = kv_fingerprint(base).digest;
  auto differs = [&](auto change) {
    KvFingerprintInputs in = base;
    change(in);
    return !(kv_fingerprint(in).digest == d);
  };
  EXPECT_TRUE(differs([](auto& i) { i.weights_identity = "w2"; }));
  EXPECT_TRUE(differs([](auto& i) { i.backend = "cuda"; }));
  EXPECT_TRUE(differs([](auto& i) { i.compute = "f32"; }));
  EXPECT_TRUE(differs([](auto& i) { i.kv_dtype = "int8"; }));
  EXPECT_TRUE(differs([](auto& i) { i.block_size = 32; }));
  EXPECT_TRUE(differs([](auto& i) { i.num_layers = 31; }));
  EXPECT_TRUE(differs([](auto& i) { i.num_kv_heads = 4; }));
  EXPECT_TRUE(differs([](auto& i) { i.head_dim = 128; }));
  EXPECT_TRUE(differs([](auto& i) { i.array_block_bytes = {1, 3}; }));
  EXPECT_TRUE(differs([](auto& i) { i.rope = "theta=2"; }));
  EXPECT_FALSE(differs([](auto&) {}));
}

}  // namespace
}  // namespace llmserve
