// The step loop's part of disaggregated prefill/decode (engine/kv_transfer): which scheduler
// requests keep or pull KV, the open of a consumer's lease (no block or slot held while the
// producer answers) and the check of what it attests, the reads' start and end, and the
// producer's handoff.
#include <spdlog/spdlog.h>

#include "engine/step_loop.h"

namespace llmserve {

void StepLoop::plan_kv_transfer(ActiveRequest& req, const KvTransferRequest& kt,
                                const std::vector<int32_t>& prompt, Request& sr) {
  if (kv_agent_ == nullptr) return;
  const int32_t n = static_cast<int32_t>(req.samples.size());
  // Pinned only when asked: flagged do_remote_decode, or on a dedicated producer a router's
  // prefill leg (max_tokens 1; smg's gRPC leg names no flag unless the worker claims NIXL).
  const bool router_leg =
      kv_agent_->options().role == "producer" && !kt.consume && req.params.max_tokens == 1;
  const bool produce = kt.produce || router_leg;
  if (produce && kv_agent_->produces() && n == 1 && !sr.score_prompt) {
    if (kv_agent_->has_pin_room(static_cast<int32_t>(prompt.size()))) {
      sr.hold_kv = true;
      req.kv_produce = true;
      req.prompt_hash = kv_prompt_hash(prompt);
    } else {
      spdlog::info(
          "kv transfer: request {} keeps no KV for a consumer (the pinned-block budget "
          "kv_transfer.max_pinned_blocks is spent)",
          req.external_id);
    }
  }
  if (!kt.consume) return;
  const auto num_tokens = static_cast<int32_t>(prompt.size());
  const uint64_t hash = kv_prompt_hash(prompt);
  if (auto why = kv_agent_->check_handoff(kt.handoff, num_tokens, hash, n,
                                          req.params.prompt_logprobs >= 0)) {
    kv_agent_->count_fallback(*why);
    spdlog::info("kv transfer: request {} prefills locally ({})", req.external_id,
                 kv_fallback_name(*why));
    return;
  }
  sr.remote_kv = true;
  remote_pulls_[sr.id] = {kt.handoff, hash, num_tokens, RemotePull::Stage::kOpening};
  kv_agent_->open(sr.id, kt.handoff);
}

void StepLoop::start_remote_pulls(const SchedulerOutput& out) {
  for (const RemoteKvStart& start : out.remote_kv_starts) {
    auto it = remote_pulls_.find(start.request_id);
    if (it == remote_pulls_.end() || kv_agent_ == nullptr) {
      (void)scheduler_->finish_remote_kv(start.request_id, false);
      continue;
    }
    it->second.stage = RemotePull::Stage::kReading;
    kv_agent_->start_pull(start);
  }
}

void StepLoop::cancel_remote_pull(uint64_t seq_id) {
  auto it = remote_pulls_.find(seq_id);
  if (it == remote_pulls_.end()) return;
  kv_agent_->cancel(seq_id);  // its result ends it (poll_kv_transfer)
  it->second.cancelled = true;
}

void StepLoop::on_lease_opened(uint64_t seq_id, RemotePull& pull, const KvLeaseInfo& lease) {
  if (pull.cancelled) return;  // the cancelled pull's kDone result follows
  if (!kv_agent_->attests(lease, pull.num_prompt_tokens, pull.prompt_hash)) {
    // The producer's lease holds another prompt than the one this request sent: its pages are
    // never cached under this prompt's hashes.
    spdlog::warn(
        "kv transfer: request {}: the producer's lease holds another prompt; "
        "prefilling locally",
        seq_id);
    kv_agent_->count_fallback(KvFallback::kPrompt);
    pull.counted = true;
    kv_agent_->cancel(seq_id);
    pull.cancelled = true;
    (void)scheduler_->open_remote_kv(seq_id, false);
    return;
  }
  pull.stage = RemotePull::Stage::kOpened;
  if (!scheduler_->open_remote_kv(seq_id, true).is_ok()) {
    kv_agent_->cancel(seq_id);  // the request ended meanwhile
    pull.cancelled = true;
  }
}

void StepLoop::poll_kv_transfer(Clock::time_point now) {
  if (kv_agent_ == nullptr) return;
  for (const KvPullResult& r : kv_agent_->take_results()) {
    auto it = remote_pulls_.find(r.id);
    if (it == remote_pulls_.end()) continue;
    RemotePull& pull = it->second;
    if (r.stage == KvPullResult::Stage::kOpened) {
      on_lease_opened(r.id, pull, r.lease);
      continue;
    }
    const bool ok = r.error == KvPullError::kNone && !pull.cancelled;
    if (ok) {
      kv_agent_->count_transfer(r);
      metrics_.kv_transfer_seconds.observe(r.seconds);
    } else {
      if (!pull.counted) {
        kv_agent_->count_fallback(r.error == KvPullError::kNone
                                      ? KvFallback::kCancelled
                                      : KvTransferAgent::fallback_of(r.error));
      }
      spdlog::info("kv transfer: pull {} failed ({}: {}); prefilling locally", r.id,
                   kv_pull_error_name(r.error), r.message);
    }
    const bool reading = pull.stage == RemotePull::Stage::kReading;
    remote_pulls_.erase(it);
    if (reading) {
      (void)scheduler_->finish_remote_kv(r.id, ok);
    } else {
      (void)scheduler_->open_remote_kv(r.id, false);  // never admitted: a local prefill
    }
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
  std::vector<int32_t> kept = blocks;
  auto handoff = kv_agent_->make_lease(std::move(kept), req.num_prompt_tokens, req.prompt_hash);
  if (!handoff) {
    scheduler_->release_blocks(blocks);  // over the budget: the consumer prefills locally
    return;
  }
  out.kv_handoff = std::move(*handoff);
}

}  // namespace llmserve
