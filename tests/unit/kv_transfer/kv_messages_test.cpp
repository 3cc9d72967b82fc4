// The control messages: every type survives a round trip, and a peer's bytes cut or padded
// anywhere, or with a length past the cap, are refused with a message (never read past the end).
#include "engine/kv_transfer/kv_messages.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

KvLayout layout() {
  return {"SmolLM2", 16, "int8", 30, 3, 64, {3072, 3072, 96, 96}};
}

std::vector<KvMessage> samples() {
  KvHelloReply reply{7, true, "", std::string(16, 'n'), std::string(32, 'm')};
  KvHelloReply refused{8, false, "KV layouts differ: block_size 16 != 32", "0123456789abcdef", ""};
  KvOpenReply open_reply;
  open_reply.cookie = 11;
  open_reply.accepted = true;
  open_reply.num_tokens = 40;
  open_reply.prompt_hash = 0x1234567890abcdefULL;
  open_reply.num_blocks = 3;
  open_reply.regions = {{0, 2, 0, 0x7f0000001000, std::string("\x00\x01\x02key", 6)},
                        {2, 1, 1, 0x7f0000009000, "k2"}};
  open_reply.mac = std::string(32, 'x');
  KvOpenReply open_refused;
  open_refused.cookie = 12;
  open_refused.reason = "no such lease";
  return {KvHello{42, std::string(16, 'c'), layout()},
          reply,
          refused,
          KvOpen{11, "0123456789abcdef0123456789abcdef", std::string(32, 'o')},
          open_reply,
          open_refused,
          KvRelease{9, "abcd-1", true, "mac"},
          KvReleaseAck{9, true, "mac"},
          KvReleaseAck{10, false, ""}};
}

TEST(KvMessages, RoundTrip) {
  for (const KvMessage& m : samples()) {
    const std::string wire = encode_kv_message(m);
    auto back = decode_kv_message(bytes_of(wire));
    ASSERT_TRUE(back.is_ok()) << back.status().message();
    EXPECT_EQ(encode_kv_message(*back), wire);
    EXPECT_EQ(back->index(), m.index());
  }
  auto hello =
      decode_kv_message(bytes_of(encode_kv_message(KvHello{42, std::string(16, 'c'), layout()})));
  ASSERT_TRUE(hello.is_ok());
  EXPECT_EQ(std::get<KvHello>(*hello).layout, layout());
  EXPECT_EQ(std::get<KvHello>(*hello).cookie, 42u);
}

TEST(KvMessages, EveryTruncationAndExtensionIsRefused) {
  for (const KvMessage& m : samples()) {
    const std::string wire = encode_kv_message(m);
    for (size_t n = 0; n < wire.size(); ++n) {
      EXPECT_FALSE(decode_kv_message(bytes_of(wire.substr(0, n))).is_ok()) << n;
    }
    EXPECT_FALSE(decode_kv_message(bytes_of(wire + "x")).is_ok());
  }
}

TEST(KvMessages, BadHeaderAndOversizedLengthsAreRefused) {
  std::string wire = encode_kv_message(KvRelease{1, "lease", false, ""});
  std::string bad = wire;
  bad[0] ^= 1;
  EXPECT_NE(decode_kv_message(bytes_of(bad)).status().message().find("magic"), std::string::npos);
  bad = wire;
  bad[4] = 1;  // the version before the authenticated protocol
  EXPECT_NE(decode_kv_message(bytes_of(bad)).status().message().find("version"), std::string::npos);
  bad = wire;
  bad[5] = 99;
  EXPECT_NE(decode_kv_message(bytes_of(bad)).status().message().find("type"), std::string::npos);
  // The lease id's length (after magic, version, type and the 8-byte cookie) set to 2^32 - 1.
  bad = wire;
  for (size_t i = 14; i < 18; ++i) bad[i] = '\xff';
  const Status st = decode_kv_message(bytes_of(bad)).status();
  EXPECT_NE(st.message().find("lease_token"), std::string::npos) << st.message();
}

TEST(KvMessages, FlagsAreZeroOrOne) {
  std::string wire = encode_kv_message(KvReleaseAck{3, true, ""});
  wire[wire.size() - 5] = 2;  // the flag, before the empty mac's 4-byte length
  EXPECT_NE(decode_kv_message(bytes_of(wire)).status().message().find("was_pinned"),
            std::string::npos);
}

// The MAC covers the message with its mac field empty: every other byte changes it.
TEST(KvMessages, MacInputCoversEveryFieldButTheMac) {
  for (KvMessage m : samples()) {
    const std::string input = kv_message_mac_input(m);
    set_kv_message_mac(m, "other");
    EXPECT_EQ(kv_message_mac_input(m), input);
    if (std::holds_alternative<KvHello>(m)) {
      EXPECT_EQ(kv_message_mac(m), "");
      continue;
    }
    EXPECT_EQ(kv_message_mac(m), "other");
  }
  KvOpenReply r = std::get<KvOpenReply>(samples()[4]);
  const std::string before = kv_message_mac_input(r);
  r.regions[1].addr += 16;
  EXPECT_NE(kv_message_mac_input(r), before);
}

TEST(KvMessages, RegionCountPastTheCapIsRefused) {
  KvOpenReply r = std::get<KvOpenReply>(samples()[4]);
  r.num_blocks = kKvMaxLeaseBlocks + 1;
  EXPECT_NE(decode_kv_message(bytes_of(encode_kv_message(r))).status().message().find("blocks"),
            std::string::npos);
}

TEST(KvLayoutMismatch, NamesTheFirstDifference) {
  KvLayout other = layout();
  EXPECT_EQ(layout_mismatch(layout(), other), "");
  other.block_size = 32;
  EXPECT_EQ(layout_mismatch(layout(), other), "block_size 16 != 32");
  other = layout();
  other.model = "Qwen";
  EXPECT_EQ(layout_mismatch(layout(), other), "model 'SmolLM2' != 'Qwen'");
  other = layout();
  other.array_block_bytes.pop_back();
  EXPECT_NE(layout_mismatch(layout(), other), "");
}

}  // namespace
}  // namespace llmserve
