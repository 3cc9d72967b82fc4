// The step loop's part of disaggregated prefill/decode (engine/kv_transfer): which scheduler
// requests keep or pull KV, the pulls' start and end, and the producer's handoff.
#include <spdlog/spdlog.h>

#include "engine/step_loop.h"

namespace llmserve {

void StepLoop::plan_kv_transfer(ActiveRequest& req, const KvTransferRequest& kt,
                                const std::vector<int32_t>& prompt, Request& sr) {
  if (kv_agent_ == nullptr) return;
  const int32_t n = static_cast<int32_t>(req.samples.size());
  // A dedicated producer keeps every prefill (smg's gRPC prefill leg names no flag unless the
  // worker claims NIXL); "both" keeps only those flagged do_remote_decode.
  const bool produce = kt.produce || (kv_agent_->options().role == "producer" && !kt.consume);
  if (produce && kv_agent_->produces() && n == 1 && !sr.score_prompt) {
    sr.hold_kv = true;
    req.kv_produce = true;
    req.prompt_hash = kv_prompt_hash(prompt);
  }
  if (!kt.consume) return;
  if (auto why = kv_agent_->check_handoff(kt.handoff, prompt, n, req.params.prompt_logprobs >= 0)) {
    kv_agent_->count_fallback(*why);
    spdlog::info("kv transfer: request {} prefills locally ({})", req.external_id,
                 kv_fallback_name(*why));
    return;
  }
  sr.remote_kv = true;
  remote_pulls_[sr.id] = {kt.handoff, false};
}

void StepLoop::start_remote_pulls(const SchedulerOutput& out) {
  for (const RemoteKvStart& start : out.remote_kv_starts) {
    auto it = remote_pulls_.find(start.request_id);
    if (it == remote_pulls_.end() || kv_agent_ == nullptr) {
      (void)scheduler_->finish_remote_kv(start.request_id, false);
      continue;
    }
    it->second.started = true;
    kv_agent_->start_pull(start, it->second.handoff);
  }
}

void StepLoop::cancel_remote_pull(uint64_t seq_id) {
  auto it = remote_pulls_.find(seq_id);
  if (it == remote_pulls_.end()) return;
  if (it->second.started) {
    kv_agent_->cancel(seq_id);  // the result ends it (poll_kv_transfer)
    return;
  }
  kv_agent_->count_fallback(KvFallback::kCancelled);
  kv_agent_->reject(it->second.handoff);
  remote_pulls_.erase(it);
}

void StepLoop::poll_kv_transfer(Clock::time_point now) {
  if (kv_agent_ == nullptr) return;
  for (const KvPullResult& r : kv_agent_->take_results()) {
    auto it = remote_pulls_.find(r.id);
    const bool ok = r.error == KvPullError::kNone;
    if (ok) {
      kv_agent_->count_transfer(r);
      metrics_.kv_transfer_seconds.observe(r.seconds);
    } else {
      kv_agent_->count_fallback(KvTransferAgent::fallback_of(r.error));
      if (it != remote_pulls_.end()) kv_agent_->reject(it->second.handoff);
      spdlog::info("kv transfer: pull {} failed ({}: {}); prefilling locally", r.id,
                   kv_pull_error_name(r.error), r.message);
    }
    if (it != remote_pulls_.end()) remote_pulls_.erase(it);
    (void)scheduler_->finish_remote_kv(r.id, ok);
  }
  kv_agent_->sweep_leases(*scheduler_, now);
}

std::optional<StepLoop::Clock::time_point> StepLoop::kv_next_expiry() const {
  return kv_agent_ != nullptr ? kv_agent_->next_expiry() : std::nullopt;
}

void StepLoop::attach_handoff(ActiveRequest& req, SampleSlot& slot, StepOutput& out) {
  std::vector<int32_t> blocks = scheduler_->take_held_blocks(slot.seq_id);
  if (blocks.empty()) return;
  if (req.stream_failed || req.stream->cancelled()) {
    scheduler_->release_blocks(blocks);  // nobody will read the handoff
    return;
  }
  out.kv_handoff = kv_agent_->make_lease(std::move(blocks), req.num_prompt_tokens, req.prompt_hash);
}

}  // namespace llmserve
