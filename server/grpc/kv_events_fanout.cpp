#include "server/grpc/kv_events_fanout.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "server/grpc/grpc_status.h"
#include "server/grpc/vllm_kv_events_call.h"
#include "server/grpc/wire_codec.h"

namespace llmserve {

namespace {
constexpr const char* kMethod = "VllmEngine/SubscribeKvEvents";
}  // namespace

// One subscriber's call. gRPC's callbacks (any thread) only flip flags and wake the fanout;
// serve(), on the fanout's thread, does the reading, writing and finishing.
class KvEventsFanout::Stream final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  Stream(KvEventsFanout& hub, std::unique_ptr<KvEventSubscription> sub)
      : hub_(hub), sub_(std::move(sub)) {
    // Answer at once: the gateway gives up on a subscription whose headers take seconds, and
    // the first batch may be far off on an idle engine.
    StartSendInitialMetadata();
  }

  void OnSendInitialMetadataDone(bool ok) override {
    if (!ok) went_away();
  }
  void OnWriteDone(bool ok) override {
    {
      std::lock_guard lock(mu_);
      writing_ = false;
      broken_ = broken_ || !ok;
    }
    hub_.wake();
  }
  void OnCancel() override { went_away(); }
  void OnDone() override {
    hub_.release();
    delete this;
  }

  // The fanout's thread: sends the next batch unless a write is in flight. False once the call
  // is finished; the stream may then be deleted at any moment and must not be touched again.
  bool serve() {
    {
      std::lock_guard lock(mu_);
      if (writing_) return true;
    }
    while (true) {
      const KvEventRead r = sub_->next(1, std::chrono::milliseconds(0));
      if (broken()) {
        return finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      }
      if (r.closed) {
        return finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the engine is shutting down"));
      }
      if (r.batches.empty()) return true;
      msg_.Clear();
      fill_kv_event_batch(*r.batches.front(), hub_.block_size_, &next_event_id_, &msg_);
      if (!serialize_response(msg_, &bytes_).ok()) continue;  // skip a batch that cannot go
      {
        std::lock_guard lock(mu_);
        writing_ = true;
      }
      StartWrite(&bytes_);
      return true;
    }
  }

 private:
  void went_away() {
    {
      std::lock_guard lock(mu_);
      broken_ = true;
    }
    sub_->cancel();
    hub_.wake();
  }
  bool broken() {
    std::lock_guard lock(mu_);
    return broken_;
  }
  bool finish(const grpc::Status& status) {
    hub_.metrics_.count_grpc(kMethod, grpc_code_name(status.error_code()));
    Finish(status);  // OnDone (and the delete) may follow on another thread at once
    return false;
  }

  KvEventsFanout& hub_;
  std::unique_ptr<KvEventSubscription> sub_;
  std::mutex mu_;
  bool writing_ = false;  // a StartWrite whose OnWriteDone has not come yet
  bool broken_ = false;   // the client went away or a write failed
  uint64_t next_event_id_ = 1;
  ::smg::grpc::common::KvEventBatch msg_;
  grpc::ByteBuffer bytes_;  // msg_ serialized; untouched while a write is in flight
};

KvEventsFanout::KvEventsFanout(KvEventBus& bus, int32_t block_size, size_t max_streams,
                               ServerMetrics& metrics)
    : bus_(bus), block_size_(block_size), max_streams_(max_streams), metrics_(metrics) {}

KvEventsFanout::~KvEventsFanout() {
  listener_.reset();  // no wake-up from the engine thread after this
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<KvEventsFanout::Writer*> KvEventsFanout::open(uint64_t start_sequence_number) {
  {
    std::lock_guard lock(mu_);
    if (open_ >= max_streams_) {
      return resource_exhausted("SubscribeKvEvents: " + std::to_string(open_) +
                                " subscriptions are open, the most this worker serves "
                                "(kv_events.max_grpc_subscribers); close one or raise the limit");
    }
    ++open_;
  }
  // Outside mu_: the bus calls wake() (which takes mu_) with its listener lock held.
  std::call_once(started_, [this] {
    listener_ = bus_.listen([this] { wake(); });
    thread_ = std::thread([this] { run(); });
  });
  auto* stream =
      new Stream(*this, bus_.subscribe(start_sequence_number == 0 ? bus_.next_sequence_number()
                                                                  : start_sequence_number));
  {
    std::lock_guard lock(mu_);
    active_.push_back(stream);
    dirty_ = true;
  }
  cv_.notify_all();
  return static_cast<Writer*>(stream);
}

size_t KvEventsFanout::open_streams() const {
  std::lock_guard lock(mu_);
  return open_;
}

void KvEventsFanout::wake() {
  {
    std::lock_guard lock(mu_);
    dirty_ = true;
  }
  cv_.notify_all();
}

void KvEventsFanout::release() {
  std::lock_guard lock(mu_);
  --open_;
}

void KvEventsFanout::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return dirty_ || stop_; });
    if (stop_) return;
    dirty_ = false;
    const std::vector<Stream*> streams = active_;
    lock.unlock();
    std::vector<Stream*> finished;
    for (Stream* s : streams) {
      if (!s->serve()) finished.push_back(s);
    }
    lock.lock();
    std::erase_if(active_, [&](Stream* s) {
      return std::find(finished.begin(), finished.end(), s) != finished.end();
    });
  }
}

}  // namespace llmserve
