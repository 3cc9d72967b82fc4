// Request: the engine's per-request state, owned by the Scheduler and read by the runner.
// Token ids are int32. A request's tokens are its prompt followed by its outputs so far;
// positions [0, num_computed_tokens) have their K/V in the request's KV blocks.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/image_spans.h"
#include "engine/generate_request.h"  // FinishReason
#include "engine/kv_cache/block_hash.h"

namespace llmserve {

enum class RequestStatus : uint8_t {
  kWaiting,    // queued, holds no KV blocks
  kRunning,    // admitted, holds KV blocks
  kPreempted,  // was running, blocks freed, queued again to be recomputed
  kRemoteKv,   // holds its prompt's blocks while a transfer fills them; runs no step
  kFinished,   // done; see finish_reason
};

// The KV-cache view of a request, kept up to date by KvCacheManager.
struct RequestKvState {
  std::vector<int32_t> block_ids;       // block table: block i holds positions [i*B, (i+1)*B)
  std::vector<BlockHash> block_hashes;  // chained hashes of the request's full blocks (lazy)
  int32_t num_cached_blocks = 0;        // leading blocks already registered in the prefix cache
  // Leading table entries given back under a sliding window (now kNullBlockId): no query of the
  // request attends their positions any more.
  int32_t num_window_freed_blocks = 0;
};

struct Request {
  using Clock = std::chrono::steady_clock;

  uint64_t id = 0;
  uint64_t arrival_seq = 0;  // arrival order, assigned by Scheduler::add_request
  Clock::time_point arrival_time{};
  int32_t priority = 0;  // lower value is served first (vLLM convention)

  std::vector<int32_t> prompt_token_ids;  // non-empty
  std::vector<int32_t> output_token_ids;  // sampled so far
  int32_t max_tokens = 16;  // limit on output tokens; 0 = compute the prompt only, sample nothing

  int32_t num_computed_tokens = 0;  // tokens whose K/V is in the cache
  int32_t num_cached_tokens = -1;   // prefix-cache hit at first admission; -1 before it
  int32_t num_preemptions = 0;
  // Speculative tokens proposed for the positions after the last token (DESIGN §6): set before
  // schedule(), cut there to what the step's budget and the length limits allow, verified in
  // the step and cleared by update() (and by a preemption).
  std::vector<int32_t> draft_token_ids;

  RequestStatus status = RequestStatus::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;

  // Requests with the same non-zero group (the n > 1 samples of one prompt) are admitted one
  // after the other so later ones reuse the first one's prompt blocks through the prefix cache.
  uint64_t group_id = 0;
  // Extra bytes mixed into every block hash (LoRA adapter, cache salt): requests with different
  // keys never share blocks. Empty for plain text requests.
  std::string cache_key;
  // Images in the prompt (engine/vision), in order: their soft-token rows and content hashes.
  // A prefill chunk never splits an image (image_safe_chunk_end), and each image's hash is mixed
  // into the hash of every block holding one of its rows (the soft-token ids are the same for
  // every image). Empty for text.
  std::vector<ImageSpan> image_spans;
  std::vector<uint64_t> image_hashes;
  // Prompt logprobs: each prompt token after the first is scored from the logits of the position
  // before it; such a request skips the prefix cache (the rows must be computed) and is
  // prefilled in chunks of at most SchedulerConfig::max_scored_tokens_per_step.
  bool score_prompt = false;
  // A pooling request (engine/pooling): max_tokens 0; its whole prompt runs in one step (never
  // chunked, so every row's hidden state comes back together) and it skips the prefix-cache
  // lookup (every row must be computed); its full blocks are cached when it ends as usual.
  bool pool = false;
  // Disaggregated prefill (engine/kv_transfer). remote_kv: at admission the request takes blocks
  // for its whole prompt and waits in kRemoteKv until Scheduler::finish_remote_kv; it is not
  // admitted (holds no block or slot) until remote_kv_open says the producer answered
  // (Scheduler::open_remote_kv). hold_kv: when it ends normally, its prompt's blocks stay pinned
  // for a consumer (take_held_blocks).
  bool remote_kv = false;
  bool remote_kv_open = false;
  bool hold_kv = false;
  // Tiers below the pool (engine/kv_offload): a preempted request whose pages a lower tier holds
  // waits in the queue (no block, no slot) while they are read back (tier_hold); it is asked
  // once per preemption (tier_asked). See Scheduler::set_readmit_hook.
  bool tier_hold = false;
  bool tier_asked = false;
  // Opaque handle to state kept by others (the sampler's slot); the scheduler never reads it.
  uint64_t user_handle = 0;

  RequestKvState kv;

  int32_t num_prompt_tokens() const { return static_cast<int32_t>(prompt_token_ids.size()); }
  int32_t num_output_tokens() const { return static_cast<int32_t>(output_token_ids.size()); }
  int32_t num_tokens() const { return num_prompt_tokens() + num_output_tokens(); }
  // Token at position pos, 0 <= pos < num_tokens().
  int32_t token_at(int32_t pos) const {
    return pos < num_prompt_tokens() ? prompt_token_ids[pos]
                                     : output_token_ids[pos - num_prompt_tokens()];
  }
  bool is_finished() const { return status == RequestStatus::kFinished; }
  // Drafts a check may verify without passing max_tokens or max_model_len (all accepted plus
  // the sampled token); may be <= 0.
  int32_t draft_room(int32_t max_model_len) const {
    return std::min(max_tokens - num_output_tokens(), max_model_len - num_tokens()) - 1;
  }
  // Tokens whose K/V must still be computed before the next token can be sampled.
  int32_t num_uncomputed_tokens() const { return num_tokens() - num_computed_tokens; }
  // Decoding: one token left to compute and it is a sampled one.
  bool is_decoding() const { return num_uncomputed_tokens() == 1 && !output_token_ids.empty(); }
};

}  // namespace llmserve
