// The thread-safe door into the engine thread: submitted requests and abort ids wait here until
// the step loop drains them at the start of its next step. Also enforces the capacity limits
// and wakes the idle loop through one condition variable.
//
// Capacity counts sequences (a request with n samples is n) wherever they are: here, waiting in
// the scheduler, or running. A request is accepted while running + waiting + its own stay within
// run slots (max_num_seqs) + queue slots (max_waiting_requests), so a burst on an idle engine
// may fill the run slots before the loop has moved any of it to running. Prompt tokens not yet
// running are bounded by max_waiting_tokens.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/status.h"
#include "engine/generate_request.h"
#include "engine/request_stream.h"

namespace llmserve {

struct PendingSubmit {
  uint64_t id = 0;  // the engine's request id (RequestStream::request_id())
  GenerateRequest request;
  std::shared_ptr<RequestStream> stream;
  std::chrono::steady_clock::time_point arrival{};
};

struct IntakeBatch {
  std::vector<PendingSubmit> submits;  // in submission order
  std::vector<uint64_t> aborts;        // applied after the submits of the same batch
  bool shutdown = false;
};

class EngineIntake {
 public:
  // max_running: the scheduler's run slots. max_waiting_requests: queue slots beyond them;
  // max_waiting_tokens: prompt tokens not yet running. <= 0 means no limit.
  EngineIntake(int32_t max_running, int32_t max_waiting_requests, int64_t max_waiting_tokens);

  // Any thread. UNAVAILABLE after stop_accepting() / shutdown(), RESOURCE_EXHAUSTED when the
  // waiting queue is full.
  Status submit(PendingSubmit p);
  void abort(uint64_t id);
  // Aborts every live request submitted with this external id; false when there is none.
  bool abort_external(const std::string& external_id);
  void stop_accepting();
  void shutdown();
  bool accepting() const;

  // Engine thread: takes everything queued.
  IntakeBatch drain();
  // Engine thread: blocks until something is queued, shutdown, or `until` (when set).
  void wait(std::optional<std::chrono::steady_clock::time_point> until = std::nullopt);
  // Engine thread: blocks until shutdown() (the fault-injected wedge).
  void wait_for_shutdown();
  // Any thread: wakes wait() once (e.g. to run a check on the engine thread).
  void wake();
  // Engine thread: the scheduler's sequences (running, and waiting with their prompt tokens).
  void set_backlog(int32_t running, int32_t waiting, int64_t waiting_tokens);
  // Engine thread: the request ended; its external id no longer aborts it.
  void forget(uint64_t id, const std::string& external_id);
  bool has_pending() const;
  // Sequences not running: submitted here, drained but not yet reported, or waiting in the
  // scheduler (as of the last set_backlog). A request is never missing from it between the
  // drain and the next set_backlog, as it would be from a stats snapshot.
  int64_t num_waiting() const;

 private:
  const int32_t max_running_;
  const int32_t max_waiting_requests_;
  const int64_t max_waiting_tokens_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<PendingSubmit> submits_;
  std::vector<uint64_t> aborts_;
  std::unordered_multimap<std::string, uint64_t> external_ids_;
  int64_t pending_seqs_ = 0;
  int64_t pending_tokens_ = 0;
  int32_t backlog_running_ = 0;
  int32_t backlog_requests_ = 0;
  int64_t backlog_tokens_ = 0;
  bool accepting_ = true;
  bool shutdown_ = false;
  bool woken_ = false;
};

}  // namespace llmserve
