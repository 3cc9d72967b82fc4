#include "server/kv_events/kv_event_msgpack.h"

#include <msgpack.hpp>

namespace llmserve {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void pack_str(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

void pack_hashes(Packer& pk, const std::vector<uint64_t>& hashes) {
  pk.pack_array(static_cast<uint32_t>(hashes.size()));
  for (uint64_t h : hashes) pk.pack_uint64(h);
}

// Writes an event's fields in order, each preceded by its name in the map layout; the tag is
// the first element (array) or the "type" entry (map).
class EventPacker {
 public:
  EventPacker(Packer& pk, std::string_view medium, KvEventLayout layout)
      : pk_(pk), medium_(medium), map_(layout == KvEventLayout::kMap) {}

  void operator()(const KvBlockStored& e) {
    begin("BlockStored", 7);
    key("block_hashes");
    pack_hashes(pk_, e.block_hashes);
    key("parent_block_hash");
    if (e.parent_block_hash) {
      pk_.pack_uint64(*e.parent_block_hash);
    } else {
      pk_.pack_nil();
    }
    key("token_ids");
    pk_.pack_array(static_cast<uint32_t>(e.token_ids.size()));
    for (int32_t t : e.token_ids) pk_.pack_int32(t);
    key("block_size");
    pk_.pack_int32(e.block_size);
    key("lora_id");
    pk_.pack_nil();
    key("medium");
    pack_str(pk_, e.medium.empty() ? medium_ : std::string_view(e.medium));
    key("lora_name");
    pk_.pack_nil();
  }
  void operator()(const KvBlockRemoved& e) {
    begin("BlockRemoved", 2);
    key("block_hashes");
    pack_hashes(pk_, e.block_hashes);
    key("medium");
    pack_str(pk_, e.medium.empty() ? medium_ : std::string_view(e.medium));
  }
  void operator()(const KvAllBlocksCleared&) { begin("AllBlocksCleared", 0); }

 private:
  void begin(std::string_view tag, uint32_t fields) {
    if (map_) {
      pk_.pack_map(fields + 1);
      pack_str(pk_, "type");
    } else {
      pk_.pack_array(fields + 1);
    }
    pack_str(pk_, tag);
  }
  void key(std::string_view name) {
    if (map_) pack_str(pk_, name);
  }

  Packer& pk_;
  std::string_view medium_;
  bool map_;
};

}  // namespace

std::string encode_kv_event_batch_msgpack(const KvEventBatch& batch, std::string_view medium,
                                          int32_t data_parallel_rank, KvEventLayout layout) {
  msgpack::sbuffer buf;
  Packer pk(&buf);
  pk.pack_array(3);
  pk.pack_double(batch.timestamp);
  pk.pack_array(static_cast<uint32_t>(batch.events.size()));
  EventPacker packer(pk, medium, layout);
  for (const KvEvent& e : batch.events) std::visit(packer, e);
  pk.pack_int32(data_parallel_rank);
  return std::string(buf.data(), buf.size());
}

}  // namespace llmserve
