// ZmqKvPublisher: the engine's KV events on ZeroMQ in vLLM's format (ZmqEventPublisher in
// vllm/distributed/kv_events.py), for routers that mirror worker caches (llm-d's precise prefix
// scorer, vllm-router's kv_aware policy, Dynamo).
//
// - PUB socket on `endpoint`, bound or connected as kv_events_endpoint.h decided (by default
//   bound on server.host only: the events carry every cached prompt's token ids). Each batch is
//   one 3-frame message: topic, the batch's sequence number as 8 bytes big-endian, the msgpack
//   payload (kv_event_msgpack.h).
// - Optional ROUTER socket on `replay` (always bound): a request [identity, "", 8-byte
//   big-endian start sequence] is answered with [identity, "", seq, payload] for every batch
//   still buffered with seq >= start, then [identity, "", -1 as 8 bytes, ""].
//
// One thread reads the KvEventBus (its own subscription: a slow network never slows the engine)
// and owns both sockets. Sends never block: past the high-water mark ZeroMQ drops messages for
// the slow subscriber, who sees the sequence gap and can ask the replay socket.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "engine/core/status.h"
#include "engine/kv_events/kv_event_bus.h"
#include "server/kv_events/kv_event_msgpack.h"
#include "server/kv_events/kv_events_endpoint.h"

namespace llmserve {

struct ZmqKvPublisherOptions {
  KvEventsEndpoint endpoint{"tcp://127.0.0.1:5557"};
  KvEventsEndpoint replay;     // endpoint "" = no replay socket
  std::string topic;           // first frame of every message
  std::string medium = "GPU";  // BlockStored / BlockRemoved medium field
  int32_t hwm = 100000;        // ZMQ_SNDHWM of the PUB socket, messages
  int32_t data_parallel_rank = 0;
  KvEventLayout layout = KvEventLayout::kMap;  // kv_event_msgpack.h
};

class ZmqKvPublisher {
 public:
  // Opens the sockets (errors name the endpoint: malformed, address in use) and starts the
  // thread. `bus` must outlive the publisher.
  static Result<std::unique_ptr<ZmqKvPublisher>> start(KvEventBus& bus,
                                                       const ZmqKvPublisherOptions& options);
  ~ZmqKvPublisher();  // stops the thread and closes the sockets
  ZmqKvPublisher(const ZmqKvPublisher&) = delete;
  ZmqKvPublisher& operator=(const ZmqKvPublisher&) = delete;

  // The endpoints as ZeroMQ reports them (a port the OS picked filled in); "" = no socket.
  const std::string& pub_endpoint() const { return pub_endpoint_; }
  const std::string& replay_endpoint() const { return replay_endpoint_; }
  uint64_t batches_sent() const { return sent_.load(); }
  uint64_t replays_served() const { return replays_.load(); }

 private:
  ZmqKvPublisher(KvEventBus& bus, ZmqKvPublisherOptions options);
  void run();
  void serve_replay();
  bool send_batch(void* socket, const void* identity_frame, size_t identity_size, uint64_t seq,
                  const std::string& payload, bool is_router);

  KvEventBus& bus_;
  ZmqKvPublisherOptions options_;
  void* context_ = nullptr;
  void* pub_ = nullptr;
  void* replay_ = nullptr;
  std::string pub_endpoint_;
  std::string replay_endpoint_;
  std::unique_ptr<KvEventSubscription> subscription_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> replays_{0};
  std::thread thread_;
};

}  // namespace llmserve
