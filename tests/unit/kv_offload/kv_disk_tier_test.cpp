// The disk tier: budgets, LRU by prefix, persistence across a reopen, and pages that are torn,
// corrupted or of another fingerprint never served.
#include "engine/kv_offload/kv_disk_tier.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace llmserve {
namespace {

namespace fs = std::filesystem;

constexpr BlockHash kFp{0xf1, 0xf2};
constexpr uint32_t kDiskBlock = 4;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("kv_disk_tier_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

KvPageHeader header(BlockHash hash, BlockHash parent, BlockHash fp = kFp) {
  KvPageHeader h;
  h.block_size = kDiskBlock;
  h.fingerprint = fp;
  h.hash = hash;
  h.parent = parent;
  return h;
}

std::vector<std::byte> payload(uint8_t seed) {
  return std::vector<std::byte>(64, static_cast<std::byte>(seed));
}

const std::vector<int32_t> kTokens4 = {1, 2, 3, 4};
const std::vector<int32_t> kTokens8 = {1, 2, 3, 4, 5, 6, 7, 8};

int64_t page_bytes(size_t tokens) {
  return static_cast<int64_t>(kv_page_prefix_bytes(tokens) + 64);
}

TEST(KvDiskTier, StoresReadsAndSurvivesAReopen) {
  TempDir d;
  std::vector<BlockHash> evicted;
  {
    auto t = KvDiskTier::open(d.path.string(), 1 << 20, kFp, kDiskBlock);
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    ASSERT_TRUE((*t)->store(header({1, 1}, {}), kTokens4, payload(7), evicted).is_ok());
    ASSERT_TRUE((*t)->store(header({2, 2}, {1, 1}), kTokens8, payload(8), evicted).is_ok());
    EXPECT_EQ((*t)->store(header({2, 2}, {1, 1}), kTokens8, payload(8), evicted).code(),
              StatusCode::kAlreadyExists);
    EXPECT_EQ((*t)->stats().bytes, page_bytes(4) + page_bytes(8));
  }
  auto t = KvDiskTier::open(d.path.string(), 1 << 20, kFp, kDiskBlock);
  ASSERT_TRUE(t.is_ok());
  const KvDiskTierStats s = (*t)->stats();
  EXPECT_EQ(s.loaded_pages, 2);
  EXPECT_EQ(s.corrupt_pages, 0);
  std::vector<std::byte> file;
  std::vector<int32_t> tokens;
  auto v = (*t)->read({2, 2}, file, tokens);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(std::vector<int32_t>(v->tokens.begin(), v->tokens.end()), kTokens8);
  EXPECT_EQ(std::vector<std::byte>(v->payload.begin(), v->payload.end()), payload(8));
  EXPECT_TRUE(evicted.empty());
}

TEST(KvDiskTier, BudgetEvictsLeastRecentlyUsedChildrenBeforeParents) {
  TempDir d;
  // Room for three pages of 8 tokens.
  auto t = KvDiskTier::open(d.path.string(), 3 * page_bytes(8), kFp, kDiskBlock);
  ASSERT_TRUE(t.is_ok());
  std::vector<BlockHash> evicted;
  // Chain A: a1 <- a2; then chain B: b1.
  ASSERT_TRUE((*t)->store(header({1, 0}, {}), kTokens8, payload(1), evicted).is_ok());
  ASSERT_TRUE((*t)->store(header({2, 0}, {1, 0}), kTokens8, payload(2), evicted).is_ok());
  ASSERT_TRUE((*t)->store(header({3, 0}, {}), kTokens8, payload(3), evicted).is_ok());
  EXPECT_TRUE(evicted.empty());
  // A fourth page: the oldest is chain A, and within it the child a2 goes before its parent.
  ASSERT_TRUE((*t)->store(header({4, 0}, {}), kTokens8, payload(4), evicted).is_ok());
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0], (BlockHash{2, 0}));
  EXPECT_TRUE((*t)->contains({1, 0}));
  EXPECT_FALSE(fs::exists((*t)->path_of({2, 0})));
  // Using chain B makes A's root the oldest.
  const BlockHash b[] = {{3, 0}};
  (*t)->touch_chain(b);
  ASSERT_TRUE((*t)->store(header({5, 0}, {}), kTokens8, payload(5), evicted).is_ok());
  ASSERT_EQ(evicted.size(), 2u);
  EXPECT_EQ(evicted[1], (BlockHash{1, 0}));
  EXPECT_LE((*t)->stats().bytes, 3 * page_bytes(8));
  EXPECT_EQ((*t)->stats().evicted_pages, 2);
  // A page larger than the whole budget is refused.
  auto tiny = KvDiskTier::open((d.path / "tiny").string(), 10, kFp, kDiskBlock);
  ASSERT_TRUE(tiny.is_ok());
  EXPECT_FALSE((*tiny)->store(header({9, 0}, {}), kTokens4, payload(9), evicted).is_ok());
}

TEST(KvDiskTier, CorruptedTornAndForeignPagesAreNeverServed) {
  TempDir d;
  std::vector<BlockHash> evicted;
  std::string corrupt_path, torn_path;
  {
    auto t = KvDiskTier::open(d.path.string(), 1 << 20, kFp, kDiskBlock);
    ASSERT_TRUE(t.is_ok());
    ASSERT_TRUE((*t)->store(header({1, 0}, {}), kTokens4, payload(1), evicted).is_ok());
    ASSERT_TRUE((*t)->store(header({2, 0}, {}), kTokens4, payload(2), evicted).is_ok());
    ASSERT_TRUE((*t)->store(header({3, 0}, {}), kTokens4, payload(3), evicted).is_ok());
    corrupt_path = (*t)->path_of({1, 0});
    torn_path = (*t)->path_of({2, 0});
  }
  {
    auto other = KvDiskTier::open((d.path / "other").string(), 1 << 20, {9, 9}, kDiskBlock);
    ASSERT_TRUE(other.is_ok());
    ASSERT_TRUE((*other)->store(header({4, 0}, {}, {9, 9}), kTokens4, payload(4), evicted).is_ok());
    fs::rename((*other)->path_of({4, 0}), d.path / fs::path((*other)->path_of({4, 0})).filename());
  }
  // Flip one payload byte of page 1; cut page 2 short.
  {
    std::fstream f(corrupt_path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-5, std::ios::end);
    f.put('\x55');
  }
  fs::resize_file(torn_path, fs::file_size(torn_path) - 3);

  auto t = KvDiskTier::open(d.path.string(), 1 << 20, kFp, kDiskBlock);
  ASSERT_TRUE(t.is_ok());
  KvDiskTierStats s = (*t)->stats();
  EXPECT_EQ(s.corrupt_pages, 1);  // the torn one, caught by its size at load
  EXPECT_FALSE(fs::exists(torn_path));
  EXPECT_EQ(s.foreign_pages, 1);
  EXPECT_FALSE((*t)->contains({4, 0}));
  EXPECT_EQ(s.loaded_pages, 2);  // 1 (not yet known to be corrupt) and 3
  std::vector<std::byte> file;
  std::vector<int32_t> tokens;
  auto v = (*t)->read({1, 0}, file, tokens);  // its payload checksum fails on read
  EXPECT_EQ(v.status().code(), StatusCode::kDataLoss);
  EXPECT_FALSE((*t)->contains({1, 0}));
  EXPECT_FALSE(fs::exists(corrupt_path));
  EXPECT_EQ((*t)->stats().corrupt_pages, 2);
  EXPECT_TRUE((*t)->read({3, 0}, file, tokens).is_ok());
}

}  // namespace
}  // namespace llmserve
