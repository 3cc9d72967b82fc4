// VllmEngine.SubscribeKvEvents: the engine's KV-event batches (engine/kv_events) as
// smg.grpc.common.KvEventBatch messages, read from a KvEventBus subscription on the call's own
// thread. start_sequence_number 0: batches published from now on; N > 0: from batch N, as far
// as the bus still holds it (older ones are gone and the sequence numbers show the gap, which
// makes the gateway resubscribe). No load records are pushed: the gateway keeps polling GetLoads.
// A slow reader only loses batches (the bus is bounded); the engine never waits for it.
#pragma once

#include <cstdint>

#include <grpcpp/grpcpp.h>

#include "engine/kv_events/kv_event.h"
#include "engine/kv_events/kv_event_bus.h"
#include "server/metrics/server_metrics.h"
#include "smg/grpc/common.pb.h"

namespace llmserve {

grpc::ServerWriteReactor<grpc::ByteBuffer>* start_kv_events_call(ServerMetrics& metrics,
                                                                 KvEventBus& bus,
                                                                 uint64_t start_sequence_number,
                                                                 int32_t block_size);

// One batch as the gateway's message; event ids continue from *next_event_id.
void fill_kv_event_batch(const KvEventBatch& batch, int32_t block_size, uint64_t* next_event_id,
                         ::smg::grpc::common::KvEventBatch* out);

}  // namespace llmserve
