// The disk tier's page file: what it writes reads back, and any torn or altered byte is caught.
#include "engine/kv_offload/kv_page_file.h"

#include <gtest/gtest.h>

#include <numeric>

namespace llmserve {
namespace {

struct Page {
  KvPageHeader header;
  std::vector<int32_t> tokens;
  std::vector<std::byte> payload;
};

Page sample_page() {
  Page p;
  p.header.block_size = 4;
  p.header.fingerprint = {11, 12};
  p.header.hash = {21, 22};
  p.header.parent = {31, 32};
  p.header.salt = kv_salt_digest("tenant-a");
  p.tokens = {5, 6, 7, 8, 9, 10, 11, 12};
  p.payload.resize(96);
  for (size_t i = 0; i < p.payload.size(); ++i) p.payload[i] = static_cast<std::byte>(i * 7 + 1);
  return p;
}

TEST(KvPageFile, RoundTrips) {
  const Page p = sample_page();
  const auto bytes = encode_kv_page(p.header, p.tokens, p.payload);
  EXPECT_EQ(bytes.size(), kv_page_prefix_bytes(8) + 96);
  std::vector<int32_t> storage;
  auto v = parse_kv_page(bytes, storage);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->header.block_size, 4u);
  EXPECT_EQ(v->header.fingerprint, (BlockHash{11, 12}));
  EXPECT_EQ(v->header.hash, (BlockHash{21, 22}));
  EXPECT_EQ(v->header.parent, (BlockHash{31, 32}));
  EXPECT_EQ(v->header.salt, kv_salt_digest("tenant-a"));
  EXPECT_EQ(std::vector<int32_t>(v->tokens.begin(), v->tokens.end()), p.tokens);
  EXPECT_EQ(std::vector<std::byte>(v->payload.begin(), v->payload.end()), p.payload);
}

TEST(KvPageFile, EveryAlteredByteIsCaught) {
  const Page p = sample_page();
  const auto good = encode_kv_page(p.header, p.tokens, p.payload);
  std::vector<int32_t> storage;
  for (size_t i = 0; i < good.size(); ++i) {
    auto bad = good;
    bad[i] ^= std::byte{0x40};
    EXPECT_FALSE(parse_kv_page(bad, storage).is_ok()) << "byte " << i;
  }
}

TEST(KvPageFile, TornAndOverlongFilesAreCaught) {
  const Page p = sample_page();
  const auto good = encode_kv_page(p.header, p.tokens, p.payload);
  std::vector<int32_t> storage;
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(parse_kv_page(std::span(good).first(n), storage).is_ok()) << n << " bytes";
  }
  auto longer = good;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(parse_kv_page(longer, storage).is_ok());
  // The header and tokens alone parse (the disk tier's index reads only those at start-up).
  EXPECT_TRUE(
      parse_kv_page_prefix(std::span(good).first(kv_page_prefix_bytes(8)), storage).is_ok());
}

TEST(KvPageFile, BoundsAreCheckedBeforeReading) {
  Page p = sample_page();
  auto bytes = encode_kv_page(p.header, p.tokens, p.payload);
  std::vector<int32_t> storage;
  // A prefix length that is not a multiple of the block size.
  p.tokens.push_back(1);
  EXPECT_FALSE(parse_kv_page(encode_kv_page(p.header, p.tokens, p.payload), storage).is_ok());
  EXPECT_EQ(kv_salt_digest(""), BlockHash{});
  EXPECT_NE(kv_salt_digest("a"), kv_salt_digest("b"));
}

}  // namespace
}  // namespace llmserve
