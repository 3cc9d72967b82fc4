#include "engine/engine_intake.h"

#include <algorithm>
#include <utility>

namespace llmserve {

EngineIntake::EngineIntake(int32_t max_running, int32_t max_waiting_requests,
                           int64_t max_waiting_tokens)
    : max_running_(max_running),
      max_waiting_requests_(max_waiting_requests),
      max_waiting_tokens_(max_waiting_tokens) {}

Status EngineIntake::submit(PendingSubmit p) {
  const auto tokens = static_cast<int64_t>(p.request.prompt_token_ids.size());
  const int64_t seqs = std::max(p.request.params.n, 1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_ || shutdown_) return unavailable("engine is not accepting requests");
    const int64_t waiting = pending_seqs_ + backlog_requests_;
    const int64_t held = waiting + backlog_running_;
    const int64_t capacity = int64_t{std::max(max_running_, 0)} + max_waiting_requests_;
    if (max_waiting_requests_ > 0 && held > 0 && held + seqs > capacity) {
      return resource_exhausted("waiting queue is full (" + std::to_string(backlog_running_) +
                                " running, " + std::to_string(waiting) +
                                " waiting; max_num_seqs + max_waiting_requests is " +
                                std::to_string(capacity) + ")");
    }
    const int64_t waiting_tokens = pending_tokens_ + backlog_tokens_;
    if (max_waiting_tokens_ > 0 && waiting > 0 && waiting_tokens + tokens > max_waiting_tokens_) {
      return resource_exhausted("waiting queue holds " + std::to_string(waiting_tokens) +
                                " prompt tokens; max_waiting_tokens is " +
                                std::to_string(max_waiting_tokens_));
    }
    if (!p.request.external_id.empty()) external_ids_.emplace(p.request.external_id, p.id);
    pending_seqs_ += seqs;
    pending_tokens_ += tokens;
    submits_.push_back(std::move(p));
  }
  cv_.notify_one();
  return Status::ok();
}

void EngineIntake::abort(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborts_.push_back(id);
  }
  cv_.notify_one();
}

bool EngineIntake::abort_external(const std::string& external_id) {
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [begin, end] = external_ids_.equal_range(external_id);
    for (auto it = begin; it != end; ++it) {
      aborts_.push_back(it->second);
      found = true;
    }
  }
  if (found) cv_.notify_one();
  return found;
}

void EngineIntake::stop_accepting() {
  std::lock_guard<std::mutex> lock(mu_);
  accepting_ = false;
}

void EngineIntake::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    accepting_ = false;
    shutdown_ = true;
  }
  cv_.notify_all();
}

bool EngineIntake::accepting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return accepting_ && !shutdown_;
}

IntakeBatch EngineIntake::drain() {
  IntakeBatch batch;
  std::lock_guard<std::mutex> lock(mu_);
  batch.submits.swap(submits_);
  batch.aborts.swap(aborts_);
  batch.shutdown = shutdown_;
  // The drained requests count against the limits until set_backlog() reports them.
  backlog_requests_ += static_cast<int32_t>(pending_seqs_);
  backlog_tokens_ += pending_tokens_;
  pending_seqs_ = 0;
  pending_tokens_ = 0;
  return batch;
}

void EngineIntake::wait(std::optional<std::chrono::steady_clock::time_point> until) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [this] { return shutdown_ || woken_ || !submits_.empty() || !aborts_.empty(); };
  if (until) {
    cv_.wait_until(lock, *until, ready);
  } else {
    cv_.wait(lock, ready);
  }
  woken_ = false;
}

void EngineIntake::wait_for_shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return shutdown_; });
}

void EngineIntake::wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

void EngineIntake::set_backlog(int32_t running, int32_t waiting, int64_t waiting_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  backlog_running_ = running;
  backlog_requests_ = waiting;
  backlog_tokens_ = waiting_tokens;
}

void EngineIntake::forget(uint64_t id, const std::string& external_id) {
  if (external_id.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto [begin, end] = external_ids_.equal_range(external_id);
  for (auto it = begin; it != end; ++it) {
    if (it->second == id) {
      external_ids_.erase(it);
      return;
    }
  }
}

bool EngineIntake::has_pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !submits_.empty() || !aborts_.empty();
}

int64_t EngineIntake::num_waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_seqs_ + backlog_requests_;
}

}  // namespace llmserve
