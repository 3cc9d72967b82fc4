#include "engine/request_stream.h"

#include <utility>

namespace llmserve {

RequestStream::RequestStream(uint64_t request_id, int32_t num_samples, size_t capacity)
    : request_id_(request_id), num_samples_(num_samples), capacity_(capacity) {}

bool RequestStream::push(StepOutput out) {
  bool fits;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_ || closed_) return false;
    fits = queue_.size() < capacity_;
    queue_.push_back(std::move(out));
  }
  cv_.notify_all();
  return fits;
}

void RequestStream::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

std::optional<StepOutput> RequestStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  timed_out_ = false;
  const bool ready =
      cv_.wait_for(lock, timeout, [this] { return !queue_.empty() || closed_ || cancelled_; });
  if (!ready) {
    timed_out_ = true;
    return std::nullopt;
  }
  if (cancelled_ || queue_.empty()) return std::nullopt;
  StepOutput out = std::move(queue_.front());
  queue_.pop_front();
  return out;
}

bool RequestStream::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_ && queue_.empty();
}

void RequestStream::cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    queue_.clear();
  }
  cv_.notify_all();
}

bool RequestStream::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

}  // namespace llmserve
