// The deployment secret's MACs (HMAC-SHA256; the oracle is Python's hmac module over the same
// framing) and the handoff's signed bytes.
#include "engine/kv_transfer/kv_auth.h"

#include <gtest/gtest.h>

#include "engine/kv_transfer/kv_handoff.h"

namespace llmserve {
namespace {

// Every part is length-prefixed (u64 little-endian) after the label's own prefix: with one part
// the HMAC input is len(label) label len(part) part.
TEST(KvAuth, MacIsHmacSha256OfTheFramedParts) {
  auto auth = KvAuth::create("Jefe-0123456789ab");
  ASSERT_TRUE(auth.is_ok());
  const std::string tag = auth->mac("L", {"ab"});
  EXPECT_EQ(tag.size(), kKvMacBytes);
  // python3 -c "import hmac,hashlib,struct; k=b'Jefe-0123456789ab';
  //   m=struct.pack('<Q',1)+b'L'+struct.pack('<Q',2)+b'ab';
  //   print(hmac.new(k,m,hashlib.sha256).hexdigest())"
  EXPECT_EQ(kv_hex(tag), "85da52ddb0bf6dcabeb45e8f8000dfd6f5cdb857adbc6cea183c479da0e0560b");
}

TEST(KvAuth, VerifyAcceptsOnlyTheSameSecretAndParts) {
  auto a = KvAuth::create("secret-one-0123456789");
  auto b = KvAuth::create("secret-two-0123456789");
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  const std::string tag = a->mac("x", {"n1", "n2", "body"});
  EXPECT_TRUE(a->verify(tag, "x", {"n1", "n2", "body"}));
  EXPECT_FALSE(b->verify(tag, "x", {"n1", "n2", "body"}));
  EXPECT_FALSE(a->verify(tag, "x", {"n1", "n2", "bodY"}));
  EXPECT_FALSE(a->verify(tag, "x", {"n1n2", "", "body"}));  // framing: no shifting bytes
  EXPECT_FALSE(a->verify(tag.substr(1), "x", {"n1", "n2", "body"}));
  EXPECT_FALSE(KvAuth().verify(tag, "x", {"n1", "n2", "body"}));  // no secret verifies nothing
}

TEST(KvAuth, EmptyOrShortSecretIsRefusedNamingTheKey) {
  auto empty = KvAuth::create("");
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("kv_transfer.secret"), std::string::npos);
  auto shorter = KvAuth::create("short");
  ASSERT_FALSE(shorter.is_ok());
  EXPECT_NE(shorter.status().message().find("at least 16"), std::string::npos);
}

TEST(KvAuth, RandomTokensAreHexAndDistinct) {
  const std::string a = kv_random_token(), b = kv_random_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(kv_random_bytes(16).size(), 16u);
}

TEST(KvHandoff, SignedBytesCoverEveryField) {
  KvHandoff h;
  h.engine_id = "e";
  h.lease_id = "t";
  h.host = "10.0.0.1";
  h.port = 5600;
  h.block_ids = {1, 2, 3};
  h.num_tokens = 40;
  h.prompt_hash = 99;
  h.layout = {"m", 16, "int8", 2, 2, 64, {}};
  const std::string base = kv_handoff_signed_bytes(h);
  auto changed = [&](auto edit) {
    KvHandoff c = h;
    edit(c);
    return kv_handoff_signed_bytes(c) != base;
  };
  EXPECT_TRUE(changed([](KvHandoff& c) { c.engine_id = "f"; }));
  EXPECT_TRUE(changed([](KvHandoff& c) { c.lease_id = "u"; }));
  EXPECT_TRUE(changed([](KvHandoff& c) { c.host = "10.0.0.2"; }));
  EXPECT_TRUE(changed([](KvHandoff& c) { c.port = 5601; }));
  EXPECT_TRUE(changed([](KvHandoff& c) { c.block_ids[2] = 4; }));
  EXPECT_TRUE(changed([](KvHandoff& c) { c.block_ids.push_back(4); }));
  EXPECT_TRUE(changed([](KvHandoff& c) { c.num_tokens = 41; }));
  EXPECT_TRUE(changed([](KvHandoff& c) { c.prompt_hash = 98; }));
  EXPECT_TRUE(changed([](KvHandoff& c) { c.layout.block_size = 32; }));
  EXPECT_TRUE(changed([](KvHandoff& c) { c.layout.model = "n"; }));
  EXPECT_FALSE(changed([](KvHandoff& c) { c.signature = "anything"; }));
}

}  // namespace
}  // namespace llmserve
