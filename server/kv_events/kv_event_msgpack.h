// vLLM's wire encoding of KV-event batches (vllm/distributed/kv_events.py, msgspec structs with
// omit_defaults=True; trailing fields vLLM gives defaults, such as extra_keys and group_idx, are
// left out as msgspec leaves them out). The batch is always an array (EventBatch is array_like):
//   batch = [ts: float64, [event...], data_parallel_rank: int]
// Events come in one of two layouts:
//   kMap (vLLM's current layout; KVCacheEvent is tag=True without array_like):
//     {"type": "BlockStored", "block_hashes": [...], "parent_block_hash": h | nil,
//      "token_ids": [...], "block_size": n, "lora_id": nil, "medium": m, "lora_name": nil}
//     {"type": "BlockRemoved", "block_hashes": [...], "medium": m}
//     {"type": "AllBlocksCleared"}
//   kArray (vLLM's earlier array_like layout, which llm-d's first decoders read):
//     ["BlockStored", [hash...], parent | nil, [token...], block_size, nil, medium, nil]
//     ["BlockRemoved", [hash...], medium]
//     ["AllBlocksCleared"]
// Hashes are unsigned integers (external_block_hash: 63-bit, nonzero).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/kv_events/kv_event.h"

namespace llmserve {

enum class KvEventLayout { kMap, kArray };

// medium: the tier the blocks live in ("GPU" for the engine's own KV cache, as vLLM names it).
std::string encode_kv_event_batch_msgpack(const KvEventBatch& batch, std::string_view medium,
                                          int32_t data_parallel_rank = 0,
                                          KvEventLayout layout = KvEventLayout::kMap);

}  // namespace llmserve
