#include "server/kv_events/zmq_kv_publisher.h"

#include <zmq.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "server/kv_events/kv_event_msgpack.h"

namespace llmserve {
namespace {

constexpr size_t kBatchesPerRead = 64;
constexpr auto kReadTimeout = std::chrono::milliseconds(20);

std::array<unsigned char, 8> big_endian(uint64_t v) {
  std::array<unsigned char, 8> out{};
  for (int i = 7; i >= 0; --i, v >>= 8) out[static_cast<size_t>(i)] = v & 0xff;
  return out;
}

void set_int(void* socket, int option, int value) {
  zmq_setsockopt(socket, option, &value, sizeof(value));
}

// Binds or connects `socket` at `e` (IPv6 on for an IPv6 host); "" on success, else the error.
std::string attach(void* socket, const KvEventsEndpoint& e) {
  if (e.ipv6) set_int(socket, ZMQ_IPV6, 1);
  const int rc =
      e.bind ? zmq_bind(socket, e.endpoint.c_str()) : zmq_connect(socket, e.endpoint.c_str());
  return rc == 0 ? std::string() : std::string(zmq_strerror(zmq_errno()));
}

// ZMQ_LAST_ENDPOINT: the endpoint with the port a wildcard bind got.
std::string last_endpoint(void* socket) {
  char buf[512];
  size_t size = sizeof(buf);
  if (zmq_getsockopt(socket, ZMQ_LAST_ENDPOINT, buf, &size) != 0 || size == 0) return "";
  return std::string(buf, size - 1);
}

// Receives every frame of one message; empty on error.
std::vector<std::string> receive_message(void* socket) {
  std::vector<std::string> frames;
  while (true) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, socket, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&msg);
      return {};
    }
    frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    const bool more = zmq_msg_more(&msg) != 0;
    zmq_msg_close(&msg);
    if (!more) return frames;
  }
}

}  // namespace

ZmqKvPublisher::ZmqKvPublisher(KvEventBus& bus, ZmqKvPublisherOptions options)
    : bus_(bus), options_(std::move(options)) {}

Result<std::unique_ptr<ZmqKvPublisher>> ZmqKvPublisher::start(
    KvEventBus& bus, const ZmqKvPublisherOptions& options) {
  std::unique_ptr<ZmqKvPublisher> p(new ZmqKvPublisher(bus, options));
  p->context_ = zmq_ctx_new();
  if (p->context_ == nullptr) return internal_error("kv_events: cannot create a ZeroMQ context");
  p->pub_ = zmq_socket(p->context_, ZMQ_PUB);
  set_int(p->pub_, ZMQ_SNDHWM, options.hwm);
  set_int(p->pub_, ZMQ_LINGER, 0);
  if (const std::string err = attach(p->pub_, options.endpoint); !err.empty()) {
    return invalid_argument("kv_events.endpoint '" + options.endpoint.endpoint + "': " + err);
  }
  p->pub_endpoint_ = last_endpoint(p->pub_);
  if (!options.replay.endpoint.empty()) {
    p->replay_ = zmq_socket(p->context_, ZMQ_ROUTER);
    set_int(p->replay_, ZMQ_LINGER, 0);
    if (const std::string err = attach(p->replay_, options.replay); !err.empty()) {
      return invalid_argument("kv_events.replay_endpoint '" + options.replay.endpoint +
                              "': " + err);
    }
    p->replay_endpoint_ = last_endpoint(p->replay_);
  }
  p->subscription_ = bus.subscribe(0);
  ZmqKvPublisher* raw = p.get();
  p->thread_ = std::thread([raw] { raw->run(); });
  return p;
}

ZmqKvPublisher::~ZmqKvPublisher() {
  stop_ = true;
  if (subscription_) subscription_->cancel();
  if (thread_.joinable()) thread_.join();
  if (pub_ != nullptr) zmq_close(pub_);
  if (replay_ != nullptr) zmq_close(replay_);
  if (context_ != nullptr) zmq_ctx_term(context_);
}

bool ZmqKvPublisher::send_batch(void* socket, const void* identity, size_t identity_size,
                                uint64_t seq, const std::string& payload, bool is_router) {
  const auto seq_bytes = big_endian(seq);
  if (is_router) {
    if (zmq_send(socket, identity, identity_size, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) return false;
    if (zmq_send(socket, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) return false;
  } else if (zmq_send(socket, options_.topic.data(), options_.topic.size(),
                      ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    return false;
  }
  if (zmq_send(socket, seq_bytes.data(), seq_bytes.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    return false;
  }
  return zmq_send(socket, payload.data(), payload.size(), ZMQ_DONTWAIT) >= 0;
}

void ZmqKvPublisher::serve_replay() {
  zmq_pollitem_t item{replay_, 0, ZMQ_POLLIN, 0};
  while (zmq_poll(&item, 1, 0) > 0 && (item.revents & ZMQ_POLLIN)) {
    const std::vector<std::string> frames = receive_message(replay_);
    // [identity, "", start]: the empty delimiter comes from a REQ peer or a DEALER that sends it.
    if (frames.size() != 3 || frames[2].size() != 8) {
      spdlog::warn("kv_events: ignoring a replay request of {} frames", frames.size());
      continue;
    }
    uint64_t start = 0;
    for (unsigned char c : frames[2]) start = (start << 8) | c;
    const std::string& id = frames[0];
    for (const auto& batch : bus_.buffered_since(start)) {
      send_batch(replay_, id.data(), id.size(), batch->sequence_number,
                 encode_kv_event_batch_msgpack(*batch, options_.medium, options_.data_parallel_rank,
                                               options_.layout),
                 /*is_router=*/true);
    }
    ++replays_;  // before the end marker, which a reader may answer by reading the count
    send_batch(replay_, id.data(), id.size(), ~uint64_t{0}, std::string(), /*is_router=*/true);
  }
}

void ZmqKvPublisher::run() {
  while (!stop_) {
    const KvEventRead r = subscription_->next(kBatchesPerRead, kReadTimeout);
    if (r.closed && !stop_) std::this_thread::sleep_for(kReadTimeout);  // engine gone: replay only
    for (const auto& batch : r.batches) {
      const std::string payload = encode_kv_event_batch_msgpack(
          *batch, options_.medium, options_.data_parallel_rank, options_.layout);
      if (send_batch(pub_, nullptr, 0, batch->sequence_number, payload, /*is_router=*/false)) {
        ++sent_;
      }
    }
    if (replay_ != nullptr) serve_replay();
  }
}

}  // namespace llmserve
