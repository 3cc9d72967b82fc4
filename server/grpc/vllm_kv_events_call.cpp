#include "server/grpc/vllm_kv_events_call.h"

#include <type_traits>
#include <variant>

namespace llmserve {

namespace cpb = ::smg::grpc::common;

namespace {

// The tier of an event's medium: "" / "GPU" = the engine's own cache, "CPU" = the host-memory
// tier, "DISK" = the disk tier (engine/kv_offload).
cpb::KvCacheTier tier_of(const std::string& medium) {
  if (medium == "DISK") return cpb::KV_CACHE_TIER_DISK;
  if (medium == "CPU") return cpb::KV_CACHE_TIER_HOST;
  return cpb::KV_CACHE_TIER_DEVICE;
}

}  // namespace

void fill_kv_event_batch(const KvEventBatch& batch, int32_t block_size, uint64_t* next_event_id,
                         cpb::KvEventBatch* out) {
  out->set_sequence_number(batch.sequence_number);
  out->set_timestamp(batch.timestamp);
  for (const KvEvent& ev : batch.events) {
    cpb::KvCacheEvent* e = out->add_events();
    e->set_event_id((*next_event_id)++);
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, KvBlockStored>) {
            cpb::KvBlocksStored* s = e->mutable_stored();
            const int32_t bs = v.block_size > 0 ? v.block_size : block_size;
            for (size_t i = 0; i < v.block_hashes.size(); ++i) {
              cpb::KvBlock* b = s->add_blocks();
              b->set_block_hash(static_cast<int64_t>(v.block_hashes[i]));
              b->set_block_size(bs);
              const size_t from = i * static_cast<size_t>(bs);
              for (size_t t = from; t < from + static_cast<size_t>(bs) && t < v.token_ids.size();
                   ++t) {
                b->add_token_ids(static_cast<uint32_t>(v.token_ids[t]));
              }
            }
            if (v.parent_block_hash) {
              s->set_parent_block_hash(static_cast<int64_t>(*v.parent_block_hash));
            }
            s->set_tier(tier_of(v.medium));
            if (!v.medium.empty()) s->set_medium(v.medium);
          } else if constexpr (std::is_same_v<T, KvBlockRemoved>) {
            cpb::KvBlocksRemoved* r = e->mutable_removed();
            for (uint64_t h : v.block_hashes) r->add_block_hashes(static_cast<int64_t>(h));
            r->set_tier(tier_of(v.medium));
            if (!v.medium.empty()) r->set_medium(v.medium);
          } else {
            e->mutable_cleared();
          }
        },
        ev);
  }
}

}  // namespace llmserve
