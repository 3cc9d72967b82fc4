// KV-cache events: what entered and left the prefix cache, in the terms of vLLM's KV events
// (vllm/distributed/kv_events.py) so that routers can mirror a worker's cache. Plain values: the
// block pool records them on the engine thread (KvEventLog), the engine hands each step's events
// to a KvEventBus as one batch, and the transports encode them (msgpack on ZMQ, protobuf on gRPC).
//
// Block hashes here are external hashes (external_block_hash, engine/kv_cache/block_hash.h):
// 63-bit, never 0, so they fit uint64 and int64 alike. Routers use them only as ids for parent
// links and removals; they recompute their own keys from token_ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace llmserve {

// Full blocks newly registered in the prefix cache, as one parent-to-child chain:
// block_hashes[0]'s parent is parent_block_hash (nullopt for a chain starting at the prompt's
// first block), block_hashes[i]'s parent is block_hashes[i - 1]. token_ids holds every block's
// tokens, block after block: block_hashes.size() * block_size entries.
struct KvBlockStored {
  std::vector<uint64_t> block_hashes;
  std::optional<uint64_t> parent_block_hash;
  std::vector<int32_t> token_ids;
  int32_t block_size = 0;
  // The tier the blocks now live in (vLLM's `medium`): "" = the engine's own KV cache (the
  // publisher names it, "GPU" as vLLM does), "CPU" = the host-memory tier, "DISK" = the disk
  // tier (engine/kv_offload).
  std::string medium;
  friend bool operator==(const KvBlockStored&, const KvBlockStored&) = default;
};

// Blocks whose hashes left the prefix cache (evicted for reuse, or dropped by a reset).
struct KvBlockRemoved {
  std::vector<uint64_t> block_hashes;
  std::string medium;  // the tier they left; "" = the engine's own KV cache
  friend bool operator==(const KvBlockRemoved&, const KvBlockRemoved&) = default;
};

// Every cached block was dropped: a subscriber forgets everything it knew of this worker.
struct KvAllBlocksCleared {
  friend bool operator==(const KvAllBlocksCleared&, const KvAllBlocksCleared&) = default;
};

using KvEvent = std::variant<KvBlockStored, KvBlockRemoved, KvAllBlocksCleared>;

// The events of one engine step, in the order they happened. sequence_number counts batches
// from 0 with no gaps (KvEventBus assigns it); timestamp is wall-clock seconds since the Unix
// epoch.
struct KvEventBatch {
  uint64_t sequence_number = 0;
  double timestamp = 0;
  std::vector<KvEvent> events;
};

}  // namespace llmserve
