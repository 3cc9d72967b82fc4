#include "server/grpc/vllm_kv_events_call.h"

#include <memory>
#include <type_traits>
#include <variant>

#include "server/grpc/grpc_status.h"
#include "server/grpc/pumped_writer.h"
#include "server/grpc/wire_codec.h"

namespace llmserve {

namespace {

namespace cpb = ::smg::grpc::common;

class KvEventsReactor : public PumpedWriter {
 public:
  KvEventsReactor(ServerMetrics& metrics, KvEventBus& bus, uint64_t start, int32_t block_size)
      : metrics_(metrics),
        sub_(bus.subscribe(start == 0 ? bus.next_sequence_number() : start)),
        block_size_(block_size) {
    // Answer at once: the gateway gives up on a subscription whose headers take seconds, and
    // the first batch may be far off on an idle engine.
    StartSendInitialMetadata();
    start_pump();
  }
  void OnSendInitialMetadataDone(bool ok) override {
    if (!ok) mark_broken();
  }

 private:
  void on_cancel() override { sub_->cancel(); }

  void pump() override {
    uint64_t next_event_id = 1;
    bool stop = false;
    while (!stop) {
      KvEventRead r = sub_->next(64, std::chrono::milliseconds(500));
      if (r.closed) break;
      for (const auto& batch : r.batches) {
        msg_.Clear();
        fill_kv_event_batch(*batch, block_size_, &next_event_id, &msg_);
        if (!serialize_response(msg_, &bytes_).ok()) continue;
        if (!send(&bytes_)) break;
      }
      stop = broken();
    }
    // The bus closed (the engine is shutting down) or the client went away.
    const grpc::Status status =
        stop ? grpc::Status(grpc::StatusCode::CANCELLED, "the client went away")
             : grpc::Status(grpc::StatusCode::UNAVAILABLE, "the engine is shutting down");
    metrics_.count_grpc("VllmEngine/SubscribeKvEvents", grpc_code_name(status.error_code()));
    Finish(status);
  }

  ServerMetrics& metrics_;
  std::unique_ptr<KvEventSubscription> sub_;
  const int32_t block_size_;
  cpb::KvEventBatch msg_;
  grpc::ByteBuffer bytes_;
};

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
            s->set_tier(cpb::KV_CACHE_TIER_DEVICE);
          } else if constexpr (std::is_same_v<T, KvBlockRemoved>) {
            cpb::KvBlocksRemoved* r = e->mutable_removed();
            for (uint64_t h : v.block_hashes) r->add_block_hashes(static_cast<int64_t>(h));
            r->set_tier(cpb::KV_CACHE_TIER_DEVICE);
          } else {
            e->mutable_cleared();
          }
        },
        ev);
  }
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* start_kv_events_call(ServerMetrics& metrics,
                                                                 KvEventBus& bus,
                                                                 uint64_t start_sequence_number,
                                                                 int32_t block_size) {
  return new KvEventsReactor(metrics, bus, start_sequence_number, block_size);
}

}  // namespace llmserve
