// KvEventBus: the engine's KV-event batches, kept in a bounded ring for any number of in-process
// readers (the ZMQ publisher, gRPC SubscribeKvEvents streams). The engine thread appends one
// batch per step that changed the prefix cache (publish: O(1), never waits for a reader); each
// reader keeps its own cursor and reads at its own pace. A reader that falls more than
// `buffer_steps` batches behind loses the oldest ones: it sees the gap (KvEventRead::missed, and
// the batch sequence numbers jump) and the bus counts them (batches_dropped). So a slow or stuck
// subscriber costs the engine nothing and memory stays bounded by buffer_steps batches.
//
// Sequence numbers start at 0 and increase by 1 per published batch. Batches are immutable and
// shared (shared_ptr<const>): readers may keep them after the ring has moved on.
//
// Thread safety: every member is safe from any thread. A KvEventSubscription may outlive the bus
// (it then reads as closed).
//
// A reader that serves many subscriptions from one thread (gRPC SubscribeKvEvents) reads them
// with a zero timeout and sleeps on its own condition variable, woken by listen().
//
// Typical reader (one thread per reader):
//   auto sub = bus->subscribe(start_sequence_number);
//   while (true) {
//     KvEventRead r = sub->next(/*max_batches=*/64, std::chrono::milliseconds(500));
//     if (r.closed) break;               // bus closed (engine shutting down) or sub->cancel()
//     for (const auto& batch : r.batches) send(*batch);  // batch->sequence_number ascending
//   }
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/kv_events/kv_event.h"

namespace llmserve {

struct KvEventRead {
  std::vector<std::shared_ptr<const KvEventBatch>> batches;  // oldest first, consecutive seqs
  // Batches between the reader's cursor and batches.front() (or the ring's head when empty)
  // that the ring no longer held: the reader fell behind, or asked for history older than the
  // ring keeps.
  uint64_t missed = 0;
  bool closed = false;  // the bus was closed or the subscription cancelled; nothing more comes
};

class KvEventSubscription;
class KvEventListener;

class KvEventBus {
 public:
  // buffer_steps >= 1: batches kept for late and lagging readers.
  explicit KvEventBus(size_t buffer_steps);
  ~KvEventBus();
  KvEventBus(const KvEventBus&) = delete;
  KvEventBus& operator=(const KvEventBus&) = delete;

  // Appends one batch (empty `events` are skipped: no sequence number is used). Returns the
  // batch's sequence number, or the next one when skipped. After close() it does nothing.
  uint64_t publish(std::vector<KvEvent> events, double timestamp);

  // A reader starting at batch `start_sequence_number` (0 = the oldest still buffered; a number
  // beyond the newest = only batches published from now on). Batches older than the ring's
  // oldest are reported once as `missed` by the first read; they do not count as dropped.
  std::unique_ptr<KvEventSubscription> subscribe(uint64_t start_sequence_number);
  // The buffered batches with sequence >= start_sequence_number, oldest first (replay).
  std::vector<std::shared_ptr<const KvEventBatch>> buffered_since(
      uint64_t start_sequence_number) const;

  // Calls `wake` on the publishing thread (the engine's) after every published batch and once
  // at close(). `wake` must be cheap and must not block or call into the bus: set a flag and
  // notify a condition variable. Destroying the returned handle unregisters it.
  std::unique_ptr<KvEventListener> listen(std::function<void()> wake);

  // Wakes every reader; reads return closed from then on; publish() drops batches.
  void close();

  uint64_t next_sequence_number() const;  // the sequence number the next batch will get
  size_t buffer_steps() const;
  uint64_t batches_published() const;
  // Batches some reader lost because it fell more than buffer_steps behind, summed over readers.
  uint64_t batches_dropped() const;
  size_t num_subscribers() const;

  struct State;  // shared with the subscriptions

 private:
  std::shared_ptr<State> state_;
};

class KvEventSubscription {
 public:
  ~KvEventSubscription();
  KvEventSubscription(const KvEventSubscription&) = delete;
  KvEventSubscription& operator=(const KvEventSubscription&) = delete;

  // Up to max_batches (>= 1) batches from the cursor on, waiting up to `timeout` for the first
  // one; advances the cursor past what it returns. Empty batches on timeout. One thread at a
  // time per subscription.
  KvEventRead next(size_t max_batches, std::chrono::milliseconds timeout);
  // Makes a pending or later next() return closed at once. Any thread.
  void cancel();
  uint64_t cursor() const;  // the sequence number the next batch returned will have, at least

 private:
  friend class KvEventBus;
  KvEventSubscription(std::shared_ptr<KvEventBus::State> state, uint64_t start,
                      uint64_t missed_before_start);
  std::shared_ptr<KvEventBus::State> state_;
  // Guarded by the state's mutex:
  uint64_t cursor_;
  uint64_t unreported_missed_;  // history asked for but no longer buffered, until first read
  bool cancelled_ = false;
};

// A registered wake-up (KvEventBus::listen). Once the destructor returns, the function is not
// running and is never called again. May outlive the bus.
class KvEventListener {
 public:
  ~KvEventListener();
  KvEventListener(const KvEventListener&) = delete;
  KvEventListener& operator=(const KvEventListener&) = delete;

 private:
  friend class KvEventBus;
  KvEventListener(std::shared_ptr<KvEventBus::State> state, uint64_t id);
  std::shared_ptr<KvEventBus::State> state_;
  uint64_t id_;
};

}  // namespace llmserve
