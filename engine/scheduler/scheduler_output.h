// What one Scheduler::schedule() decides: the requests that run this step, how many tokens each,
// where their K/V lives, which of them sample, and who left since the previous step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/request.h"

namespace llmserve {

struct ScheduledRequest {
  const Request* request = nullptr;  // valid until the next schedule()
  uint64_t request_id = 0;
  int32_t num_computed_tokens = 0;  // before this step; new tokens are positions
  int32_t num_new_tokens = 0;       // [num_computed_tokens, num_computed_tokens + num_new_tokens)
  std::span<const int32_t> block_table;  // covers every position above; valid until update()
  bool sample = false;  // the last new token's logits are sampled (all known tokens computed)
  bool is_new = false;  // first step since admission (new, or resumed after a preemption)
  // A decode with drafts: new tokens are the last known token then these, every one sampled
  // (num_new_tokens = 1 + draft_tokens.size()). Valid until update().
  std::span<const int32_t> draft_tokens;
  // Prompt scoring (Request::score_prompt): the first num_scored new tokens' logits are also
  // returned, row i scoring prompt token num_computed_tokens + i + 1.
  int32_t num_scored = 0;
  bool pool = false;  // Request::pool: every new row's hidden state is wanted

  int32_t num_draft_tokens() const { return static_cast<int32_t>(draft_tokens.size()); }
};

struct FinishedRequest {
  uint64_t request_id = 0;
  FinishReason reason = FinishReason::kNone;
};

// A request admitted to wait for remote KV (Request::remote_kv): its blocks, of which the first
// num_cached_blocks came from the local prefix cache (not to be pulled).
struct RemoteKvStart {
  uint64_t request_id = 0;
  std::vector<int32_t> block_ids;
  int32_t num_cached_blocks = 0;
};

struct SchedulerStats {
  int32_t num_scheduled_tokens = 0;
  int32_t num_prefill_tokens = 0;  // prompt chunks and recompute after preemption
  int32_t num_decode_tokens = 0;   // one per decoding request, plus its drafts
  int32_t num_draft_tokens = 0;    // speculative tokens verified this step
  int32_t num_scheduled_requests = 0;
  int32_t num_running = 0;  // after this step's decisions
  int32_t num_waiting = 0;
  int32_t num_preempted = 0;  // this step
  double kv_usage = 0.0;      // after this step's allocations
};

struct SchedulerOutput {
  uint64_t step = 0;
  std::vector<ScheduledRequest> scheduled;  // running ones first, then newly admitted
  std::vector<uint64_t> preempted_ids;      // preempted this step (blocks freed, re-queued)
  std::vector<FinishedRequest> finished;    // finished or aborted since the last step; blocks freed
  std::vector<RemoteKvStart> remote_kv_starts;  // admitted to kRemoteKv this schedule()
  SchedulerStats stats;

  int32_t num_sampled() const {
    int32_t n = 0;
    for (const auto& s : scheduled) n += s.sample;
    return n;
  }
  bool empty() const { return scheduled.empty(); }
};

}  // namespace llmserve
