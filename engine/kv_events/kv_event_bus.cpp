#include "engine/kv_events/kv_event_bus.h"

#include <algorithm>
#include <cassert>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

namespace llmserve {

struct KvEventBus::State {
  explicit State(size_t cap) : capacity(std::max<size_t>(cap, 1)) {}

  // The buffered batch with this sequence number; precondition: oldest() <= seq < next_seq.
  const std::shared_ptr<const KvEventBatch>& at(uint64_t seq) const {
    return ring[static_cast<size_t>(seq - oldest())];
  }
  uint64_t oldest() const { return next_seq - ring.size(); }
  void wake_listeners() {
    std::lock_guard<std::mutex> lock(listeners_mu);
    for (const auto& [id, wake] : listeners) wake();
  }

  const size_t capacity;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<const KvEventBatch>> ring;  // consecutive seqs, newest at the back
  uint64_t next_seq = 0;
  uint64_t dropped = 0;
  size_t subscribers = 0;
  bool closed = false;
  // Held while the listeners run, so unregistering waits for a running call.
  std::mutex listeners_mu;
  std::map<uint64_t, std::function<void()>> listeners;
  uint64_t next_listener = 0;
};

KvEventBus::KvEventBus(size_t buffer_steps) : state_(std::make_shared<State>(buffer_steps)) {}

KvEventBus::~KvEventBus() {
  close();
}

uint64_t KvEventBus::publish(std::vector<KvEvent> events, double timestamp) {
  auto batch = std::make_shared<KvEventBatch>();
  batch->timestamp = timestamp;
  batch->events = std::move(events);
  std::shared_ptr<const KvEventBatch> evicted;  // destroyed after the lock is released
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->closed || batch->events.empty()) return state_->next_seq;
    seq = batch->sequence_number = state_->next_seq++;
    state_->ring.push_back(std::move(batch));
    if (state_->ring.size() > state_->capacity) {
      evicted = std::move(state_->ring.front());
      state_->ring.pop_front();
    }
  }
  state_->cv.notify_all();
  state_->wake_listeners();
  return seq;
}

std::unique_ptr<KvEventSubscription> KvEventBus::subscribe(uint64_t start_sequence_number) {
  std::lock_guard<std::mutex> lock(state_->mu);
  ++state_->subscribers;
  uint64_t start = std::min(start_sequence_number, state_->next_seq);
  const uint64_t missed = start < state_->oldest() ? state_->oldest() - start : 0;
  start += missed;
  return std::unique_ptr<KvEventSubscription>(new KvEventSubscription(state_, start, missed));
}

std::vector<std::shared_ptr<const KvEventBatch>> KvEventBus::buffered_since(
    uint64_t start_sequence_number) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  std::vector<std::shared_ptr<const KvEventBatch>> out;
  for (uint64_t s = std::max(start_sequence_number, state_->oldest()); s < state_->next_seq; ++s) {
    out.push_back(state_->at(s));
  }
  return out;
}

void KvEventBus::close() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->closed) return;
    state_->closed = true;
  }
  state_->cv.notify_all();
  state_->wake_listeners();
}

std::unique_ptr<KvEventListener> KvEventBus::listen(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(state_->listeners_mu);
  const uint64_t id = state_->next_listener++;
  state_->listeners.emplace(id, std::move(wake));
  return std::unique_ptr<KvEventListener>(new KvEventListener(state_, id));
}

KvEventListener::KvEventListener(std::shared_ptr<KvEventBus::State> state, uint64_t id)
    : state_(std::move(state)), id_(id) {}

KvEventListener::~KvEventListener() {
  std::lock_guard<std::mutex> lock(state_->listeners_mu);
  state_->listeners.erase(id_);
}

uint64_t KvEventBus::next_sequence_number() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->next_seq;
}

size_t KvEventBus::buffer_steps() const {
  return state_->capacity;
}

uint64_t KvEventBus::batches_published() const {
  return next_sequence_number();
}

uint64_t KvEventBus::batches_dropped() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->dropped;
}

size_t KvEventBus::num_subscribers() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->subscribers;
}

KvEventSubscription::KvEventSubscription(std::shared_ptr<KvEventBus::State> state, uint64_t start,
                                         uint64_t missed_before_start)
    : state_(std::move(state)), cursor_(start), unreported_missed_(missed_before_start) {}

KvEventSubscription::~KvEventSubscription() {
  std::lock_guard<std::mutex> lock(state_->mu);
  --state_->subscribers;
}

KvEventRead KvEventSubscription::next(size_t max_batches, std::chrono::milliseconds timeout) {
  assert(max_batches >= 1);
  KvEventBus::State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  s.cv.wait_for(lock, timeout, [&] { return s.closed || cancelled_ || cursor_ < s.next_seq; });
  KvEventRead r;
  if (s.closed || cancelled_) {
    r.closed = true;
    return r;
  }
  r.missed = std::exchange(unreported_missed_, 0);
  if (cursor_ < s.oldest()) {  // fell behind: the ring moved past unread batches
    s.dropped += s.oldest() - cursor_;
    r.missed += s.oldest() - cursor_;
    cursor_ = s.oldest();
  }
  while (cursor_ < s.next_seq && r.batches.size() < max_batches) {
    r.batches.push_back(s.at(cursor_++));
  }
  return r;
}

void KvEventSubscription::cancel() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    cancelled_ = true;
  }
  state_->cv.notify_all();
}

uint64_t KvEventSubscription::cursor() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return cursor_;
}

}  // namespace llmserve
