// Prefix-cache key of a full KV block: h_i = XXH3-128(h_{i-1} ‖ tokens of block i ‖ extra key),
// with h_{-1} = 0. Equal hashes mean equal token prefixes (up to 128-bit collisions, which the
// BlockPool guards against by also comparing the block's tokens and parent hash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace llmserve {

struct BlockHash {
  uint64_t lo = 0;
  uint64_t hi = 0;
  friend bool operator==(const BlockHash&, const BlockHash&) = default;
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.lo ^ (h.hi * 31)); }
};

// Hash of one full block given its parent's hash (BlockHash{} for the first block). extra_key is
// the per-request hook (LoRA name, cache salt; later multimodal item hashes); empty for plain text.
// Tokens are hashed as little-endian int32.
BlockHash hash_block_tokens(const BlockHash& parent, std::span<const int32_t> tokens,
                            std::span<const std::byte> extra_key = {});

// The hash as KV events publish it (engine/kv_events): the low 63 bits, or 1 where those are all
// zero, so it is a nonzero value of both uint64 and int64 (smg's proto, llm-d's decoder).
inline uint64_t external_block_hash(const BlockHash& h) {
  const uint64_t v = h.lo & 0x7fffffffffffffffULL;
  return v == 0 ? 1 : v;
}

}  // namespace llmserve
