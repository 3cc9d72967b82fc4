// The control messages of the KV transfer (the data moves as RMA reads, not in messages). Every
// message: magic "LKVT", version 2, a type byte, then its fields little-endian; strings and byte
// strings as a u32 length and the bytes. Decoding checks every length against the bytes left
// and the caps below, so a peer's message can never read past its buffer.
//   Hello       consumer -> producer, once per connection: a connection cookie, the consumer's
//               nonce and layout.
//   HelloReply  producer -> consumer: accepted or the reason (a layout mismatch), the producer's
//               nonce, and a MAC proving it holds the deployment's secret.
//   Open        consumer -> producer: a lease token, MAC'd (proves the consumer holds the secret).
//   OpenReply   producer -> consumer: what the lease holds (token count, prompt hash, blocks) and,
//               per run of its blocks and cache array, the address and a remote key of exactly
//               that region; MAC'd (the attestation a consumer caches pages under).
//   Release     consumer -> producer: the consumer is done with a lease (pulled, or refused it).
//   ReleaseAck  producer -> consumer: whether the lease was still pinned when released.
// Every message after Hello carries `mac`: HMAC-SHA256 (kv_auth.h) over both connection nonces and
// the message encoded with an empty mac (kv_message_mac_input).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engine/core/status.h"
#include "engine/kv_transfer/kv_layout.h"

namespace llmserve {

inline constexpr uint32_t kKvMaxString = 4096;       // model names, reasons, lease tokens
inline constexpr uint32_t kKvMaxArrays = 1 << 16;    // arrays in a cache layout
inline constexpr uint32_t kKvMaxKeyBytes = 1 << 16;  // one packed remote key
inline constexpr uint32_t kKvMaxRegions = 1 << 20;   // regions in an OpenReply
inline constexpr uint32_t kKvMaxLeaseBlocks = 1 << 22;

struct KvArraySpan {
  uint64_t offset = 0;       // from the cache's base address
  uint64_t block_bytes = 0;  // one block of this array
  friend bool operator==(const KvArraySpan&, const KvArraySpan&) = default;
};

struct KvHello {
  uint64_t cookie = 0;  // names the connection in the reply
  std::string nonce;    // kKvNonceBytes
  KvLayout layout;
};

struct KvHelloReply {
  uint64_t cookie = 0;
  bool accepted = false;
  std::string reason;  // when refused
  std::string nonce;   // the producer's
  std::string mac;
};

struct KvOpen {
  uint64_t cookie = 0;  // names the pull
  std::string lease_token;
  std::string mac;
};

// Lease positions [first, first + count) of cache array `array`, at `addr` in the producer,
// readable with `rkey`.
struct KvRegion {
  uint32_t first = 0;
  uint32_t count = 0;
  uint32_t array = 0;
  uint64_t addr = 0;
  std::string rkey;
  friend bool operator==(const KvRegion&, const KvRegion&) = default;
};

struct KvOpenReply {
  uint64_t cookie = 0;
  bool accepted = false;
  std::string reason;  // when refused
  int32_t num_tokens = 0;
  uint64_t prompt_hash = 0;
  uint32_t num_blocks = 0;  // the lease's length
  std::vector<KvRegion> regions;
  std::string mac;
};

struct KvRelease {
  uint64_t cookie = 0;
  std::string lease_token;
  bool pulled = false;  // false: the consumer refused the handoff
  std::string mac;
};

struct KvReleaseAck {
  uint64_t cookie = 0;
  bool was_pinned = false;
  std::string mac;
};

using KvMessage = std::variant<KvHello, KvHelloReply, KvOpen, KvOpenReply, KvRelease, KvReleaseAck>;

std::string encode_kv_message(const KvMessage& m);
// INVALID_ARGUMENT naming what is wrong (bad magic, version, type, a length past the end or a
// cap, trailing bytes).
Result<KvMessage> decode_kv_message(std::span<const uint8_t> bytes);
// The bytes a message's MAC covers: the message encoded with its mac field empty.
std::string kv_message_mac_input(KvMessage m);
// The message's mac field ("" for Hello), and a setter.
const std::string& kv_message_mac(const KvMessage& m);
void set_kv_message_mac(KvMessage& m, std::string mac);

}  // namespace llmserve
