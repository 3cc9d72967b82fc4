// The engine thread's work (DESIGN §2): admits drained requests into the Scheduler, and each
// step runs schedule -> build the ForwardBatch -> ModelRunner::execute -> sample every sampling
// row with its own RNG -> Scheduler::update -> detokenize + stop check -> push StepOutputs, and
// records the metrics. Ends requests from outside (abort, timeout, a gone reader). Single-
// threaded: every method runs on the engine thread, except step_timings() (any thread).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/active_request.h"
#include "engine/engine_intake.h"
#include "engine/engine_stats.h"
#include "engine/kv_offload/kv_offloader.h"
#include "engine/kv_transfer/kv_transfer_agent.h"
#include "engine/pooling/pooler.h"
#include "engine/reasoning/reasoning_budget.h"
#include "engine/runner/batch_builder.h"
#include "engine/runner/model_runner.h"
#include "engine/runner/sampler.h"
#include "engine/scheduler/scheduler.h"
#include "engine/spec/proposer.h"
#include "engine/spec/spec_config.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

// Speculative decoding for the step loop: the settings and the proposer (null when off).
struct Speculation {
  SpecConfig config;
  std::unique_ptr<Proposer> proposer;
  // A check of d drafts in decode steps, measured at start-up (verify_cost.h); null: the gate
  // prices a check at 1 + config.draft_token_cost * d.
  std::shared_ptr<const std::vector<double>> check_costs;
};

// Cumulative wall time of the step phases, in seconds, over `steps` non-empty steps.
struct StepTimings {
  uint64_t steps = 0;
  double schedule_s = 0;  // Scheduler::schedule + update + batch building
  double model_s = 0;     // ModelRunner::execute_and_sample (forward and sampling)
  double propose_s = 0;   // speculative drafts (n-gram lookup or the draft model)
  double sample_s = 0;    // gathering the sampled tokens
  double output_s = 0;    // detokenize, stop check, stream pushes, metrics
  uint64_t tokens = 0;    // tokens run (prefill + decode)
  uint64_t decode_tokens = 0;
  // Steps that ran decodes only (no prompt tokens): their count, wall time and tokens.
  uint64_t decode_only_steps = 0;
  double decode_only_s = 0;
  uint64_t decode_only_tokens = 0;
};

class StepLoop {
 public:
  using Clock = std::chrono::steady_clock;
  // Called just before a request sends its last message (the intake forgets its external id).
  using EndedFn = std::function<void(uint64_t id, const std::string& external_id)>;

  StepLoop(std::unique_ptr<ModelRunner> runner, std::unique_ptr<Scheduler> scheduler,
           const Tokenizer& tokenizer, EngineMetrics& metrics, uint64_t server_seed,
           EndedFn on_ended, Speculation speculation = {});

  // Turns a submitted request into n scheduler requests (or ends it at once: past its deadline,
  // or refused by the scheduler -> kError).
  void admit(PendingSubmit p);
  // Ends every unfinished sample of request `id` (unknown ids are ignored). An abort that comes
  // once the request's deadline has passed ends it as kTimeout.
  void end_request(uint64_t id, FinishReason reason, Status error = Status::ok());
  // Aborts requests whose reader is gone and times out those past their deadline.
  void check_streams_and_deadlines(Clock::time_point now);
  // One step. Returns false when the scheduler had nothing to run.
  bool step();
  void abort_all();

  // Disaggregated prefill/decode (step_loop_kv_transfer.cpp): the agent, set once before the
  // first admit; null when kv_transfer.role is none.
  void set_kv_agent(std::unique_ptr<KvTransferAgent> agent) { kv_agent_ = std::move(agent); }
  // Pooling requests' vectors (engine/pooling); set once before the first admit.
  void set_pooler(std::shared_ptr<const Pooler> pooler) { pooler_ = std::move(pooler); }
  const KvTransferAgent* kv_agent() const { return kv_agent_.get(); }
  // Each loop pass: applies finished pulls (the requests run from the next step) and unpins
  // leases released or expired.
  void poll_kv_transfer(Clock::time_point now);
  // When the next lease expires (the idle loop wakes for it); nullopt when none.
  std::optional<Clock::time_point> kv_next_expiry() const;

  // Tiers below the page pool (step_loop_kv_offload.cpp): the offloader, set once before the
  // first admit; null when kv_offload is off.
  void set_kv_offloader(std::unique_ptr<KvOffloader> offloader);
  const KvOffloader* kv_offloader() const { return offloader_.get(); }
  // Takes a submitted request whose prompt continues past the pool's cached prefix into pages a
  // tier holds: it waits (no block, no slot) while the worker reads them ahead, and is admitted
  // by poll_kv_offload once they are in the pool. False: admit it now.
  bool hold_for_restore(PendingSubmit& p);
  // Each loop pass: unpins blocks the worker has copied out, publishes tier events, places
  // read-ahead pages into the pool and admits their requests.
  void poll_kv_offload();
  // After each step: hands the blocks the step registered in the prefix cache to the worker.
  void offload_new_blocks();
  // Waits until the worker has copied every block it was handed and applies the results
  // (before an invariant check: no pin of the offloader's is left).
  void settle_kv_offload();

  bool has_work() const { return scheduler_->has_unfinished_requests() || !held_.empty(); }
  uint64_t steps() const { return steps_; }
  // Gauges and counters (the caller adds intake-side fields).
  void fill_stats(EngineStats& s) const;
  int64_t waiting_prompt_tokens() const;
  const Scheduler& scheduler() const { return *scheduler_; }
  Scheduler& scheduler() { return *scheduler_; }
  const ModelRunner& runner() const { return *runner_; }
  StepTimings step_timings() const;

 private:
  struct SampleRef {
    ActiveRequest* req = nullptr;
    SampleSlot* slot = nullptr;
  };

  void deliver(ActiveRequest& req, SampleSlot& slot, StepOutput out);
  void on_sample_finished(ActiveRequest& req, SampleSlot& slot);
  void fail_step(const SchedulerOutput& out, const Status& error);
  void record_first_schedule(ActiveRequest& req, SampleSlot& slot, const ScheduledRequest& s,
                             Clock::time_point now);
  void collect_garbage();
  void propose_drafts();
  // Cuts `drafts` at the first token the sample's grammar refuses (none without a grammar).
  void truncate_to_grammar(uint64_t seq_id, std::vector<int32_t>& drafts);
  // Cuts drafts at the first one that differs from the close a reasoning budget forces there.
  void truncate_to_budget(uint64_t seq_id, std::vector<int32_t>& drafts);
  // A sample's reasoning budget state for `budget`, nullopt when inactive.
  std::optional<ReasoningBudgetState> budget_state(const ReasoningBudget& budget);
  // Tokens of the k-th sampling entry that stand: the leading kept rows of its chain.
  void gather_accepted(const SchedulerOutput& out);
  void keep_prompt_logprobs(const ScheduledRequest& s, size_t row);
  void deliver_tokens(const ScheduledRequest& s, size_t first_row, int32_t count,
                      FinishReason sched_end, Clock::time_point now);
  // KV transfer: marks the scheduler request of a producer or consumer request; starts the
  // pulls of requests just admitted to wait for remote KV; gives a producer's last message its
  // handoff; cancels a consumer's pull when its request ends.
  void plan_kv_transfer(ActiveRequest& req, const KvTransferRequest& kt,
                        const std::vector<int32_t>& prompt, Request& sr);
  void start_remote_pulls(const SchedulerOutput& out);
  void attach_handoff(ActiveRequest& req, SampleSlot& slot, StepOutput& out);
  void cancel_remote_pull(uint64_t seq_id);

  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<Scheduler> scheduler_;
  // After runner_ and scheduler_: destroyed first, so no transfer outlives the cache memory.
  std::unique_ptr<KvTransferAgent> kv_agent_;
  struct RemotePull {
    enum class Stage { kOpening, kOpened, kReading };  // kReading: admitted to kRemoteKv
    KvHandoff handoff;
    uint64_t prompt_hash = 0;  // this request's own prompt
    int32_t num_prompt_tokens = 0;
    Stage stage = Stage::kOpening;
    bool cancelled = false;  // its kDone result is still to come
    bool counted = false;    // its fallback is already counted
  };
  void on_lease_opened(uint64_t seq_id, RemotePull& pull, const KvLeaseInfo& lease);
  std::unordered_map<uint64_t, RemotePull> remote_pulls_;  // consumer requests, by seq id
  struct HeldRequest {
    PendingSubmit submit;
    Clock::time_point since;
  };
  std::unique_ptr<KvOffloader> offloader_;
  std::unordered_map<uint64_t, HeldRequest> held_;  // waiting for read-ahead, by request id
  // Preempted requests held in the scheduler while their pages come back from a tier, by the
  // scheduler's request id (Scheduler::set_readmit_hook).
  std::unordered_map<uint64_t, Clock::time_point> preempted_held_;
  bool restore_preempted(const Request& r);
  void place_preempted(KvRestoreResult& r);
  // Reads ahead the pages of `tokens` past the pool's cached prefix when a tier holds the next
  // one (false: nothing to wait for; a miss is counted), under `key` for take_restored.
  bool start_restore(std::vector<int32_t> tokens, const std::string& cache_key, uint64_t key);
  // Places restored pages into the pool; the number of blocks placed.
  int32_t place_restored(std::span<const int32_t> tokens, const std::string& cache_key,
                         const KvRestoreResult& r);
  uint64_t blocks_restored_ = 0;
  uint64_t preempted_restores_ = 0;  // preempted requests that resumed from a tier
  const Tokenizer& tokenizer_;
  std::shared_ptr<const TokenBytesTable> token_bytes_;  // built on the first reasoning budget
  EngineMetrics& metrics_;
  const uint64_t server_seed_;
  EndedFn on_ended_;
  std::vector<int32_t> eos_ids_;
  Sampler sampler_;
  BatchBuilder builder_;

  std::unordered_map<uint64_t, std::unique_ptr<ActiveRequest>> active_;
  std::unordered_map<uint64_t, SampleRef> by_seq_;
  std::vector<uint64_t> done_;  // requests whose stream closed; erased after the step
  std::vector<uint64_t> failed_streams_;
  uint64_t next_seq_id_ = 1;

  std::vector<BatchEntry> entries_;
  std::vector<int32_t> sampled_;
  std::vector<SampleResult> results_;
  std::vector<SampleRow> sample_rows_;
  std::vector<int32_t> num_accepted_;  // per sampling entry: tokens that stand this step
  std::vector<size_t> first_row_;      // per sampling entry: its first row in results_

  Speculation spec_;
  std::shared_ptr<const Pooler> pooler_;
  // Pooling: the vector of a pooling entry of this step (rows from the runner's pooled_hidden).
  StepOutput pooled_output(ActiveRequest& req, SampleSlot& slot, size_t entry,
                           const ScheduledRequest& s);
  std::vector<DraftRequest> draft_requests_;
  std::vector<Draft> drafts_;

  // Counters (engine thread writes; fill_stats reads on the same thread).
  uint64_t steps_ = 0;
  uint64_t prompt_tokens_ = 0;
  uint64_t pooled_requests_ = 0;  // pooling requests answered
  uint64_t generation_tokens_ = 0;
  std::array<uint64_t, 6> finished_by_reason_{};
  uint64_t spec_num_drafts_ = 0, spec_num_draft_tokens_ = 0, spec_num_accepted_tokens_ = 0;
  std::vector<uint64_t> spec_accepted_per_position_;

  mutable std::mutex timings_mu_;
  StepTimings timings_;
};

}  // namespace llmserve
