#include "server/common/server_state.h"

namespace llmserve {

const char* reject_reason_name(RejectReason r) {
  switch (r) {
    case RejectReason::kNone:
      return "none";
    case RejectReason::kDraining:
      return "draining";
    case RejectReason::kNotReady:
      return "not_ready";
    case RejectReason::kQueueFull:
      return "queue_full";
    case RejectReason::kTooManyConcurrent:
      return "too_many_concurrent";
  }
  return "unknown";
}

ServerState::ServerState(Engine* engine, ServerOptions options)
    : engine_(engine), options_(std::move(options)) {}

std::string ServerState::model_name() const {
  if (!options_.served_model_name.empty()) return options_.served_model_name;
  return engine_ ? engine_->model_name() : std::string();
}

bool ServerState::ready(std::string* why) const {
  auto fail = [&](const char* reason) {
    if (why) *why = reason;
    return false;
  };
  if (engine_ == nullptr) return fail("model not loaded");
  if (draining_) return fail("draining");
  const EngineStats s = engine_->stats();
  const double window_ms = options_.watchdog_seconds * 1000.0;
  if (s.has_pending_work && window_ms > 0 && static_cast<double>(s.last_step_age_ms) > window_ms) {
    return fail("engine has pending work but has not stepped within the watchdog window");
  }
  return true;
}

Status ServerState::admit(RejectReason* reason, int max_in_flight) {
  *reason = RejectReason::kNone;
  if (draining_) {
    *reason = RejectReason::kDraining;
    return unavailable("the server is shutting down");
  }
  if (engine_ == nullptr) {
    *reason = RejectReason::kNotReady;
    return unavailable("the model is not loaded");
  }
  const EngineStats s = engine_->stats();
  // Run slots and queue slots together, as the engine's intake counts them: a burst that the
  // engine has not yet moved from waiting to running still finds the run slots free.
  const int64_t held = s.requests_running + s.requests_waiting;
  const int64_t capacity = int64_t{engine_->options().max_num_seqs} + options_.max_waiting_requests;
  if (options_.max_waiting_requests > 0 && held >= capacity) {
    *reason = RejectReason::kQueueFull;
    return resource_exhausted("the waiting queue is full (" + std::to_string(s.requests_running) +
                              " running, " + std::to_string(s.requests_waiting) +
                              " waiting; run slots + queue slots: " + std::to_string(capacity) +
                              "); retry later");
  }
  if (options_.max_waiting_tokens > 0 && s.waiting_prompt_tokens >= options_.max_waiting_tokens) {
    *reason = RejectReason::kQueueFull;
    return resource_exhausted("the waiting queue is full (" +
                              std::to_string(s.waiting_prompt_tokens) +
                              " prompt tokens waiting); retry later");
  }
  if (max_in_flight > 0 && in_flight_.load() >= max_in_flight) {
    *reason = RejectReason::kTooManyConcurrent;
    return resource_exhausted(
        "too many concurrent generation requests (limit " + std::to_string(max_in_flight) +
        " over HTTP and gRPC together: server.http_threads - 8, keeping 8 HTTP workers for "
        "other calls); retry later");
  }
  return Status::ok();
}

std::unique_ptr<ServerState::Slot> ServerState::take_slot() {
  in_flight_.fetch_add(1);
  return std::make_unique<Slot>(&in_flight_);
}

}  // namespace llmserve
