// Scheduler: vLLM-V1-style token-budget continuous batching (DESIGN.md §4). One thread (the
// engine's) owns it. Each step: running requests in (priority, arrival) order — a decode takes 1
// token, an unfinished prefill the rest of its tokens cut to the budget left after reserving one
// token for every later decode; when blocks run out the lowest-priority, latest-arrived running
// request is preempted (recompute). Then waiting requests in (priority, arrival) order, with a
// prefix-cache lookup, while budget, max_num_seqs and blocks allow.
//
// Speculative decoding: set_draft_tokens() before schedule() gives a decoding request drafts;
// it is then scheduled as 1 + d tokens (d cut to the budget left after the later decodes'
// reservations, to max_tokens and to max_model_len; dropped before anyone is preempted for
// them), and update() takes the tokens accepted from that check: the accepted drafts and one
// sampled token. Rejected positions are bookkeeping only: num_computed_tokens counts the accepted
// ones, the blocks stay with the request, and only accepted tokens reach the prefix cache.
//
// n > 1 samples: the caller adds one request per sample with the same prompt and a shared
// group_id; a group member is not admitted while another member is still computing the prompt's
// full blocks, so the later members reuse those blocks through the prefix cache (no copy-on-write:
// each member computes its own last, partial prompt block).
//
// Images (Request::image_spans): a prefill chunk never splits an image (its rows attend each
// other); a chunk that would is cut before it, and a chunk starting at an image runs all of it,
// waiting for a step whose budget left holds it. add_request refuses an image larger than
// max_num_batched_tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/core/status.h"
#include "engine/kv_cache/kv_cache_manager.h"
#include "engine/request.h"
#include "engine/scheduler/scheduler_config.h"
#include "engine/scheduler/scheduler_output.h"

namespace llmserve {

class Scheduler {
 public:
  static Result<std::unique_ptr<Scheduler>> create(const SchedulerConfig& config,
                                                   KvCacheManager kv_cache);

  // Queues a request (status, counters and KV state are reset; arrival_seq assigned). Fails on a
  // duplicate id, an empty prompt, max_tokens < 0, a prompt of max_model_len tokens or more, or a
  // request whose largest footprint can never fit in the KV cache.
  Status add_request(Request request);
  // Marks a request for abort; at the next schedule() its blocks are freed and it is reported in
  // SchedulerOutput::finished with kAbort. Unknown ids give kNotFound.
  Status abort_request(uint64_t id);
  // Ends a request now (EOS, stop string: decided by the caller), freeing its blocks. kNotFound if
  // unknown or already finished.
  Status finish(uint64_t id, FinishReason reason);

  // Drafts for the positions after a decoding request's last token (replacing earlier ones).
  // kNotFound if unknown or finished; kFailedPrecondition unless it is running and decoding.
  Status set_draft_tokens(uint64_t id, std::span<const int32_t> drafts);

  // Decides the next step. The reference stays valid until the next schedule().
  const SchedulerOutput& schedule();
  // Applies the step's results: advances computed tokens, caches full blocks, appends one sampled
  // token per entry of output.scheduled with sample == true (in that order) and applies the length
  // stops (max_tokens, max_model_len; max_tokens == 0 ends once the prompt is computed). output
  // is the last schedule()'s. Returns the requests this call finished; they stay readable through
  // find() until the next schedule().
  const std::vector<FinishedRequest>& update(const SchedulerOutput& output,
                                             std::span<const int32_t> sampled_tokens);
  // The same with num_tokens[k] tokens for the k-th sampling entry (1 without drafts; for an
  // entry with d drafts, 1 + the number of leading drafts accepted, the last token being the
  // sampled one), taken from sampled_tokens in order. Length stops apply token by token.
  const std::vector<FinishedRequest>& update(const SchedulerOutput& output,
                                             std::span<const int32_t> sampled_tokens,
                                             std::span<const int32_t> num_tokens);

  // Disaggregated prefill. A kRemoteKv request's blocks are filled: pulled = true counts its
  // prompt as computed but the last position (recomputed for the first logits) and registers the
  // full blocks in the prefix cache; false (the pull failed) keeps only its local prefix-cache hit
  // and prefills the rest. Either way it runs from the next schedule(). For a request that ended
  // while its blocks were being filled, the blocks are let go now. kNotFound for neither.
  Status finish_remote_kv(uint64_t id, bool pulled);
  // A waiting remote_kv request's lease was opened (true: it may now be admitted to kRemoteKv)
  // or could not be (false: it prefills locally like any request). kNotFound when it is not a
  // waiting remote_kv request.
  Status open_remote_kv(uint64_t id, bool opened);
  // The prompt blocks a Request::hold_kv request kept pinned when it ended (empty when it ended
  // otherwise); the caller owns them and gives them back with release_blocks.
  std::vector<int32_t> take_held_blocks(uint64_t id);
  void release_blocks(std::span<const int32_t> block_ids) { kv_.unpin(block_ids); }

  // Tiers below the pool: when a preempted request comes up for admission with room for all of
  // its blocks, hook(request) may start reading its pages back from a lower tier and return
  // true (at most once per preemption); the request then waits (no block, no slot) until
  // release_tier_hold(id), and is admitted by a later schedule() whose prefix lookup finds what
  // was restored. kNotFound for a request that is not held (it ended meanwhile).
  void set_readmit_hook(std::function<bool(const Request&)> hook) {
    readmit_hook_ = std::move(hook);
  }
  Status release_tier_hold(uint64_t id);

  const Request* find(uint64_t id) const;
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  // Waiting for a step, or for remote KV.
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size() + remote_.size()); }
  int32_t num_remote_kv() const { return static_cast<int32_t>(remote_.size()); }
  bool has_unfinished_requests() const {
    return !running_.empty() || !waiting_.empty() || !remote_.empty();
  }
  int64_t num_preemptions() const { return total_preemptions_; }
  const SchedulerConfig& config() const { return config_; }
  const KvCacheManager& kv_cache() const { return kv_; }
  // The tiers below the pool (engine/kv_offload) pin, restore and record through it; they never
  // touch a request's blocks.
  KvCacheManager& kv_cache_for_offload() { return kv_; }
  // The KV-cache events recorded since the last call (KvCacheManager::take_events).
  std::vector<KvEvent> take_kv_events() { return kv_.take_events(); }
  void enable_kv_events(bool enabled) { kv_.enable_events(enabled); }
  // Drops the cached hashes of blocks no request holds; true when none is left.
  bool reset_prefix_cache() { return kv_.reset_prefix_cache(); }
  // Queue/KV consistency (running hold blocks, waiting hold none, ref counts match); O(blocks).
  Status check_invariants() const;

 private:
  struct ArrivalOrder {
    bool operator()(const Request* a, const Request* b) const {
      return a->priority != b->priority ? a->priority < b->priority
                                        : a->arrival_seq < b->arrival_seq;
    }
  };

  Scheduler(const SchedulerConfig& config, KvCacheManager kv_cache);
  void schedule_running(int32_t& budget);
  void schedule_waiting(int32_t& budget);
  void preempt(Request& request);
  void finish_request(Request& request, FinishReason reason);
  bool group_is_prefilling(uint64_t group_id);
  int32_t score_room(const Request& r) const;
  int32_t image_chunk(const Request& r, int32_t start, int32_t num_new, int32_t room) const;
  int32_t shareable_prompt_tokens(const Request& r) const;
  void emit(Request& request, int32_t num_new_tokens, bool is_new);
  void start_remote_kv(Request& request, const CachedPrefix& prefix);

  SchedulerConfig config_;
  KvCacheManager kv_;
  std::unordered_map<uint64_t, std::unique_ptr<Request>> requests_;
  std::vector<Request*> running_;  // sorted by ArrivalOrder
  std::set<Request*, ArrivalOrder> waiting_;
  std::vector<Request*> remote_;  // kRemoteKv
  // Blocks pinned when their request ended: held for a consumer (hold_kv), or still being
  // written by a transfer (an ended kRemoteKv request), by request id.
  std::unordered_map<uint64_t, std::vector<int32_t>> held_, orphaned_;
  std::vector<uint64_t> pending_aborts_;
  std::vector<uint64_t> finished_to_erase_;
  std::vector<FinishedRequest> finished_since_step_;
  std::vector<FinishedRequest> update_finished_;
  int32_t scored_this_step_ = 0;  // scored prompt rows emitted in the current schedule()
  std::vector<uint64_t> prefilling_groups_;
  SchedulerOutput output_;
  uint64_t next_arrival_seq_ = 0;
  int64_t total_preemptions_ = 0;
  std::function<bool(const Request&)> readmit_hook_;
};

}  // namespace llmserve
