#include "engine/kv_cache/block_hash.h"

#include <xxhash.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace llmserve {
namespace {

// Oracle: one-shot XXH3-128 over the concatenated bytes parent.lo, parent.hi, tokens, [len, key].
BlockHash one_shot(const BlockHash& parent, const std::vector<int32_t>& tokens,
                   const std::string& key) {
  std::vector<unsigned char> bytes(16 + tokens.size() * 4);
  std::memcpy(bytes.data(), &parent.lo, 8);
  std::memcpy(bytes.data() + 8, &parent.hi, 8);
  std::memcpy(bytes.data() + 16, tokens.data(), tokens.size() * 4);
  if (!key.empty()) {
    const uint64_t len = key.size();
    bytes.resize(bytes.size() + 8 + key.size());
    std::memcpy(bytes.data() + 16 + tokens.size() * 4, &len, 8);
    std::memcpy(bytes.data() + 24 + tokens.size() * 4, key.data(), key.size());
  }
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return {h.low64, h.high64};
}

TEST(BlockHash, MatchesOneShotXxh3OverConcatenatedBytes) {
  const std::vector<int32_t> t1 = {1, 2, 3, 4}, t2 = {5, 6, 7, 8};
  const BlockHash h1 = hash_block_tokens({}, t1);
  EXPECT_EQ(h1, one_shot({}, t1, ""));
  const BlockHash h2 = hash_block_tokens(h1, t2);
  EXPECT_EQ(h2, one_shot(h1, t2, ""));
  const std::string key = "lora:abc";
  EXPECT_EQ(hash_block_tokens(h1, t2, std::as_bytes(std::span<const char>(key))),
            one_shot(h1, t2, key));
}

TEST(BlockHash, ChainDependsOnParentTokensAndExtraKey) {
  const std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 3, 5};
  const BlockHash ha = hash_block_tokens({}, a);
  EXPECT_EQ(ha, hash_block_tokens({}, a));
  EXPECT_NE(ha, hash_block_tokens({}, b));
  EXPECT_NE(hash_block_tokens(ha, a), hash_block_tokens({}, a));
  const std::string key = "salt";
  EXPECT_NE(hash_block_tokens({}, a, std::as_bytes(std::span<const char>(key))), ha);
}

}  // namespace
}  // namespace llmserve
