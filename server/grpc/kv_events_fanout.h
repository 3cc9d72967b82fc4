// KvEventsFanout: every VllmEngine.SubscribeKvEvents stream of one server, fed by ONE thread, and
// at most `max_streams` of them (kv_events.max_grpc_subscribers; past it a new call gets
// RESOURCE_EXHAUSTED). A subscriber costs a bus subscription and one message buffer, never a
// thread: the thread sleeps until the bus publishes (KvEventBus::listen), a write completes, a
// stream opens or a client goes away, then sends each idle stream its next batch (one write in
// flight per stream, so a slow reader delays nobody else and only loses batches, as the bus is
// bounded). start_sequence_number 0: batches published from now on; N > 0: from batch N as far as
// the bus still holds it (the sequence numbers show any gap; the gateway then resubscribes).
// No load records are pushed: the gateway keeps polling GetLoads.
//
// The thread starts with the first stream. Destroy the fanout only after the gRPC server has
// shut down (every stream finished); the bus may go first (streams then end UNAVAILABLE).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "engine/core/status.h"
#include "engine/kv_events/kv_event_bus.h"
#include "server/metrics/server_metrics.h"

namespace llmserve {

class KvEventsFanout {
 public:
  using Writer = grpc::ServerWriteReactor<grpc::ByteBuffer>;

  // `bus` must outlive the fanout's open() calls; `block_size` fills blocks whose events carry
  // none.
  KvEventsFanout(KvEventBus& bus, int32_t block_size, size_t max_streams, ServerMetrics& metrics);
  ~KvEventsFanout();
  KvEventsFanout(const KvEventsFanout&) = delete;
  KvEventsFanout& operator=(const KvEventsFanout&) = delete;

  // The reactor of a new stream (already sending its headers), or RESOURCE_EXHAUSTED when
  // max_streams are open. A stream's slot is free again once its call is done.
  Result<Writer*> open(uint64_t start_sequence_number);
  size_t open_streams() const;

 private:
  class Stream;
  void wake();
  void release();  // a stream's call is done
  void run();

  KvEventBus& bus_;
  const int32_t block_size_;
  const size_t max_streams_;
  ServerMetrics& metrics_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool dirty_ = false;  // something to do: a batch, a finished write, a new or gone stream
  bool stop_ = false;
  size_t open_ = 0;              // streams whose call is not done yet (the cap counts these)
  std::vector<Stream*> active_;  // streams not finished yet; only the thread finishes them
  std::once_flag started_;       // the listener and the thread, with the first stream
  std::unique_ptr<KvEventListener> listener_;
  std::thread thread_;
};

}  // namespace llmserve
