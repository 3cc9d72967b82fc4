// VllmEngine.SubscribeKvEvents: the engine's KV-event batches (engine/kv_events) as
// smg.grpc.common.KvEventBatch messages. The streams themselves are served by KvEventsFanout
// (kv_events_fanout.h): one thread for all of them, at most kv_events.max_grpc_subscribers.
#pragma once

#include <cstdint>

#include "engine/kv_events/kv_event.h"
#include "smg/grpc/common.pb.h"

namespace llmserve {

// One batch as the gateway's message; event ids continue from *next_event_id.
void fill_kv_event_batch(const KvEventBatch& batch, int32_t block_size, uint64_t* next_event_id,
                         ::smg::grpc::common::KvEventBatch* out);

}  // namespace llmserve
