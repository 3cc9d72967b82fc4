// The offloader's worker over a host twin of a KV cache (two arrays in one allocation, as the
// CPU backend lays it out): write-behind copies a pinned block out and writes it, read-ahead
// brings back exactly its bytes, and a page found by a colliding hash is never restored into
// another conversation.
#include "engine/kv_offload/kv_offloader.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>

#include "engine/kv_offload/kv_page_file.h"

namespace llmserve {
namespace {

namespace fs = std::filesystem;

constexpr int32_t kBs = 4;
constexpr int32_t kBlocks = 8;

struct HostTwin {
  // Array 0: 32 bytes per block; array 1: 8 bytes per block (like int8 scales).
  std::vector<std::byte> mem = std::vector<std::byte>(kBlocks * 40);
  KvHostMemory memory() {
    KvHostMemory m;
    m.base = mem.data();
    m.bytes = mem.size();
    m.arrays = {{0, 32}, {kBlocks * 32, 8}};
    return m;
  }
  void fill(int32_t block, uint8_t v) {
    for (int i = 0; i < 32; ++i) mem[block * 32 + i] = static_cast<std::byte>(v + i);
    for (int i = 0; i < 8; ++i) mem[kBlocks * 32 + block * 8 + i] = static_cast<std::byte>(v ^ i);
  }
};

struct Fixture : ::testing::Test {
  fs::path dir =
      fs::temp_directory_path() / ("kv_offloader_test_" + std::to_string(::getpid()) + "_" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  HostTwin twin;
  KvFingerprint fp = kv_fingerprint({"w", "cpu", "", "int8", kBs, 1, 1, 8, {32, 8}, "theta=1"});
  std::mutex mu;
  std::condition_variable cv;
  int wakes = 0;

  void SetUp() override { fs::remove_all(dir); }
  void TearDown() override { fs::remove_all(dir); }

  std::unique_ptr<KvOffloader> make() {
    auto disk = KvDiskTier::open(dir.string(), 1 << 20, fp.digest, kBs);
    EXPECT_TRUE(disk.is_ok());
    return std::make_unique<KvOffloader>(KvOffloadOptions{1 << 20, dir.string()},
                                         KvBlockIo(twin.memory()), fp, kBs, std::move(disk).value(),
                                         [this] {
                                           std::lock_guard<std::mutex> l(mu);
                                           ++wakes;
                                           cv.notify_all();
                                         });
  }

  // Hashes of a prompt's full blocks, as the KV cache manager makes them.
  static std::vector<BlockHash> chain(const std::vector<int32_t>& tokens, std::string_view salt) {
    std::vector<BlockHash> out;
    BlockHash parent{};
    for (size_t b = 0; b + kBs <= tokens.size(); b += kBs) {
      parent = hash_block_tokens(parent, std::span(tokens).subspan(b, kBs),
                                 std::as_bytes(std::span(salt.data(), salt.size())));
      out.push_back(parent);
    }
    return out;
  }

  // Stores blocks [0, n) of `tokens`, block i's bytes taken from pool block first_id + i.
  void store_chain(KvOffloader& o, const std::vector<int32_t>& tokens, std::string_view salt,
                   int32_t first_id, int32_t n) {
    const auto hashes = chain(tokens, salt);
    auto shared = std::make_shared<const std::vector<int32_t>>(tokens);
    for (int32_t i = 0; i < n; ++i) {
      ASSERT_TRUE(o.wants(hashes[i]));
      o.store({first_id + i, hashes[i], i == 0 ? BlockHash{} : hashes[i - 1], kv_salt_digest(salt),
               shared, i});
    }
    o.flush();
  }

  KvRestoreResult restore(KvOffloader& o, const std::vector<int32_t>& tokens,
                          std::vector<BlockHash> hashes, std::string_view salt) {
    KvRestoreJob job;
    job.key = 7;
    job.hashes = std::move(hashes);
    job.tokens = tokens;
    job.salt = kv_salt_digest(salt);
    o.restore(std::move(job));
    o.flush();
    auto r = o.take_restored();
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? KvRestoreResult{} : std::move(r[0]);
  }
};

const std::vector<int32_t> kConvA = {10, 11, 12, 13, 14, 15, 16, 17, 18};
const std::vector<int32_t> kConvB = {20, 21, 22, 23, 24, 25, 26, 27, 28};

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
  ASSERT_EQ(r.payloads.size(), 2u);
  KvBlockIo io(twin.memory());
  std::vector<std::byte> expect(io.block_bytes());
  io.copy_out(2, expect);
  EXPECT_EQ(r.payloads[1], expect);
  // Copied into another block, the bytes land in every array.
  io.copy_in(5, r.payloads[0]);
  std::vector<std::byte> a(io.block_bytes()), b(io.block_bytes());
  io.copy_out(1, a);
  io.copy_out(5, b);
  EXPECT_EQ(a, b);
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
  EXPECT_TRUE(r.payloads.empty());
  EXPECT_EQ(o->stats().rejected_pages, 1);
  EXPECT_EQ(o->stats().disk_hits, 0);
  // The same prompt under another tenant's salt: its hashes differ, and forced to A's, the salt
  // digest stored with the page refuses it.
  EXPECT_TRUE(restore(*o, kConvA, chain(kConvA, ""), "tenant-b").payloads.empty());
  EXPECT_TRUE(restore(*o, kConvA, chain(kConvA, "tenant-b"), "tenant-b").payloads.empty());
  // A shares a first block with a conversation that parts after it: one block comes back.
  std::vector<int32_t> c = kConvA;
  c[5] = 99;
  const auto rc = restore(*o, c, chain(kConvA, ""), "");
  EXPECT_EQ(rc.payloads.size(), 1u);
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
  EXPECT_FALSE(o->on_disk(chain(kConvA, "")[0]));
  EXPECT_TRUE(restore(*o, kConvA, chain(kConvA, ""), "").payloads.empty());
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
