// The control messages of the KV transfer (the data moves as RMA reads, not in messages). Every
// message: magic "LKVT", version 1, a type byte, then its fields little-endian; strings and byte
// strings as a u32 length and the bytes. Decoding checks every length against the bytes left
// and the caps below, so a peer's message can never read past its buffer.
//   Hello       consumer -> producer, once per connection: a cookie and the consumer's layout.
//   HelloReply  producer -> consumer: accepted or the reason (a layout mismatch), and for an
//               accepted one the cache's base address, each array's offset and block bytes, and
//               the packed remote key of the cache memory.
//   Release     consumer -> producer: the consumer is done with a lease (pulled, or refused it).
//   ReleaseAck  producer -> consumer: whether the lease was still pinned when released.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engine/core/status.h"
#include "engine/kv_transfer/kv_layout.h"

namespace llmserve {

inline constexpr uint32_t kKvMaxString = 4096;       // model names, reasons, lease ids
inline constexpr uint32_t kKvMaxArrays = 1 << 16;    // arrays in a cache layout
inline constexpr uint32_t kKvMaxKeyBytes = 1 << 16;  // packed remote key

struct KvArraySpan {
  uint64_t offset = 0;       // from the cache's base address
  uint64_t block_bytes = 0;  // one block of this array
  friend bool operator==(const KvArraySpan&, const KvArraySpan&) = default;
};

struct KvHello {
  uint64_t cookie = 0;
  KvLayout layout;
};

struct KvHelloReply {
  uint64_t cookie = 0;
  bool accepted = false;
  std::string reason;  // when refused
  uint64_t base = 0;   // the producer's cache base address
  std::vector<KvArraySpan> arrays;
  std::string rkey;  // packed remote key bytes
};

struct KvRelease {
  uint64_t cookie = 0;
  std::string lease_id;
  bool pulled = false;  // false: the consumer refused the handoff
};

struct KvReleaseAck {
  uint64_t cookie = 0;
  bool was_pinned = false;
};

using KvMessage = std::variant<KvHello, KvHelloReply, KvRelease, KvReleaseAck>;

std::string encode_kv_message(const KvMessage& m);
// INVALID_ARGUMENT naming what is wrong (bad magic, version, type, a length past the end or a
// cap, trailing bytes).
Result<KvMessage> decode_kv_message(std::span<const uint8_t> bytes);

}  // namespace llmserve
