// The bounded channel from the engine thread to one client (DESIGN §2). The engine pushes
// StepOutputs; the client pops them. When the client stops reading and the buffer holds
// `capacity` messages, push() reports overflow and the engine aborts the request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "engine/generate_request.h"

namespace llmserve {

class RequestStream {
 public:
  RequestStream(uint64_t request_id, int32_t num_samples, size_t capacity);

  uint64_t request_id() const { return request_id_; }
  int32_t num_samples() const { return num_samples_; }

  // Engine side. Returns false when the buffer is full (the message is still queued, so the
  // final record is never lost) or the stream was closed by the reader.
  bool push(StepOutput out);
  // Engine side: no more messages will come (after every sample's final message).
  void close();

  // Client side. Blocks until a message, the end of the stream (nullopt), or the timeout
  // (nullopt with timed_out() true).
  std::optional<StepOutput> next(std::chrono::milliseconds timeout = std::chrono::hours(24));
  bool finished() const;   // closed and drained
  bool timed_out() const { return timed_out_; }
  // Client side: the reader is gone (disconnect); the engine should abort the request.
  void cancel();
  bool cancelled() const;

 private:
  const uint64_t request_id_;
  const int32_t num_samples_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StepOutput> queue_;
  bool closed_ = false;
  bool cancelled_ = false;
  bool timed_out_ = false;
};

}  // namespace llmserve
