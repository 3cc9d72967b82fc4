// State shared by both transports: draining, readiness, and the admission check that runs
// before any parsing (queue bound, concurrency bound). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "engine/core/status.h"
#include "engine/engine.h"
#include "server/common/active_requests.h"
#include "server/common/reasoning_parser.h"
#include "server/common/server_options.h"

namespace llmserve {

// Why a request was turned away before it reached the engine (metric label values).
enum class RejectReason { kNone, kDraining, kNotReady, kQueueFull, kTooManyConcurrent };
const char* reject_reason_name(RejectReason r);  // "draining", "not_ready", "queue_full", ...
// Every reason a request can be turned away for (kNone excluded).
inline constexpr RejectReason kRejectReasons[] = {RejectReason::kDraining, RejectReason::kNotReady,
                                                  RejectReason::kQueueFull,
                                                  RejectReason::kTooManyConcurrent};

class ServerState {
 public:
  ServerState(Engine* engine, ServerOptions options);

  Engine* engine() const { return engine_; }
  const ServerOptions& options() const { return options_; }
  ActiveRequests& active() { return active_; }
  std::string model_name() const;  // served_model_name or the engine's
  // The reasoning parser in force (server.reasoning_parser resolved against the chat template):
  // where a reply's reasoning section starts, for transports that get raw prompts (gRPC).
  ReasoningParser reasoning_parser() const { return reasoning_parser_; }
  void set_reasoning_parser(ReasoningParser p) { reasoning_parser_ = p; }

  void start_draining() { draining_ = true; }
  bool draining() const { return draining_; }
  // Model loaded, not draining, and the engine has stepped within the watchdog window
  // whenever it has pending work. `why` gets the reason when not ready.
  bool ready(std::string* why = nullptr) const;

  // Admission for generation requests: UNAVAILABLE (draining / not ready) or
  // RESOURCE_EXHAUSTED (queue full: running + waiting sequences at the engine's max_num_seqs +
  // max_waiting_requests; waiting prompt tokens at max_waiting_tokens; or max_in_flight calls).
  // On OK the caller holds a slot until the returned guard is released.
  class Slot {
   public:
    explicit Slot(std::atomic<int>* counter) : counter_(counter) {}
    ~Slot() {
      if (counter_) counter_->fetch_sub(1);
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    std::atomic<int>* counter_;
  };
  Status admit(RejectReason* reason, int max_in_flight);
  std::unique_ptr<Slot> take_slot();  // after admit() returned OK
  int in_flight() const { return in_flight_.load(); }

 private:
  Engine* engine_;
  ServerOptions options_;
  ActiveRequests active_;
  ReasoningParser reasoning_parser_ = ReasoningParser::kNone;
  std::atomic<bool> draining_{false};
  std::atomic<int> in_flight_{0};
};

}  // namespace llmserve
