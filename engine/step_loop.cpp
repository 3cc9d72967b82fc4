#include "engine/step_loop.h"

#include <algorithm>
#include <utility>

#include "engine/output_processor.h"

namespace llmserve {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Prompt tokens the detokenizer sees as context, so the first output token decodes mid-sequence.
constexpr size_t kDetokenizerContext = 4;

}  // namespace

StepLoop::StepLoop(std::unique_ptr<ModelRunner> runner, std::unique_ptr<Scheduler> scheduler,
                   const Tokenizer& tokenizer, EngineMetrics& metrics, uint64_t server_seed,
                   EndedFn on_ended, Speculation speculation)
    : runner_(std::move(runner)),
      scheduler_(std::move(scheduler)),
      tokenizer_(tokenizer),
      metrics_(metrics),
      server_seed_(server_seed),
      on_ended_(std::move(on_ended)),
      eos_ids_(generation_eos_ids(tokenizer, runner_->config())),
      sampler_(static_cast<int32_t>(runner_->config().vocab_size), eos_ids_),
      builder_(runner_->block_size()),
      spec_(std::move(speculation)) {
  if (spec_.proposer != nullptr) {
    spec_accepted_per_position_.assign(static_cast<size_t>(spec_.config.num_tokens), 0);
  }
}

void StepLoop::propose_drafts() {
  if (spec_.proposer == nullptr || !spec_.config.enabled() ||
      scheduler_->num_running() > spec_.config.max_running_requests) {
    return;
  }
  draft_requests_.clear();
  const int32_t max_model_len = scheduler_->config().max_model_len;
  const bool gate_after = spec_.proposer->proposes_before_gate();
  for (const auto& [seq, ref] : by_seq_) {
    if (ref.slot->finished()) continue;
    const Request* r = scheduler_->find(seq);
    if (r == nullptr || r->status != RequestStatus::kRunning || !r->is_decoding()) continue;
    const int32_t room = std::min(spec_.config.num_tokens, r->draft_room(max_model_len));
    const int32_t want = gate_after ? room : ref.slot->draft_gate.num_drafts(room);
    if (want > 0) draft_requests_.push_back({seq, ref.slot->tokens, want});
  }
  if (draft_requests_.empty()) return;
  // Deterministic order (by_seq_ is a hash map): the draft model batches in this order.
  std::sort(draft_requests_.begin(), draft_requests_.end(),
            [](const DraftRequest& a, const DraftRequest& b) { return a.seq_id < b.seq_id; });
  if (!spec_.proposer->propose(draft_requests_, drafts_).is_ok()) return;  // no drafts this step
  for (size_t i = 0; i < draft_requests_.size() && i < drafts_.size(); ++i) {
    const uint64_t seq = draft_requests_[i].seq_id;
    std::vector<int32_t>& tokens = drafts_[i].tokens;
    if (gate_after && !tokens.empty()) {
      DraftGate& gate = by_seq_.at(seq).slot->draft_gate;
      tokens.resize(static_cast<size_t>(
          gate.num_drafts_for_match(static_cast<int32_t>(tokens.size()), drafts_[i].match_length)));
    }
    truncate_to_grammar(seq, tokens);
    truncate_to_budget(seq, tokens);
    if (!tokens.empty()) (void)scheduler_->set_draft_tokens(seq, tokens);
  }
}

void StepLoop::truncate_to_grammar(uint64_t seq_id, std::vector<int32_t>& drafts) {
  auto it = by_seq_.find(seq_id);
  if (it == by_seq_.end() || drafts.empty()) return;
  TokenMatcher* m = it->second.slot->sampling.matcher();
  if (m == nullptr) return;
  // Each position against the grammar: the matcher walks the drafts and rolls back over them.
  size_t ok = 0;
  while (ok < drafts.size() && m->accept(drafts[ok])) ++ok;
  m->rollback(static_cast<int32_t>(ok));
  drafts.resize(ok);  // a draft the grammar refuses could never be accepted: nor its followers
}

void StepLoop::admit(PendingSubmit p) {
  auto req = std::make_unique<ActiveRequest>();
  ActiveRequest& r = *req;
  r.id = p.id;
  r.external_id = std::move(p.request.external_id);
  r.params = std::move(p.request.params);
  r.num_prompt_tokens = static_cast<int32_t>(p.request.prompt_token_ids.size());
  r.deadline = p.request.deadline;
  r.stream = std::move(p.stream);
  r.arrival = p.arrival;
  r.pooling = p.request.pooling;
  r.images = std::move(p.request.images);
  for (const PromptImage& im : r.images) {
    r.image_spans.push_back(im.span);
    r.image_features.push_back(im.features->data());
  }
  const std::vector<int32_t>& prompt = p.request.prompt_token_ids;
  const int32_t max_model_len = scheduler_->config().max_model_len;
  const int32_t max_new = std::min(r.params.max_tokens, max_model_len - r.num_prompt_tokens);
  const size_t ctx = std::min(prompt.size(), kDetokenizerContext);
  const std::span<const int32_t> context(prompt.data() + prompt.size() - ctx, ctx);
  const int32_t n = std::max(r.params.n, 1);
  const std::optional<ReasoningBudgetState> budget = budget_state(p.request.reasoning_budget);
  for (int32_t i = 0; i < n; ++i) {
    const uint64_t seed = SamplingState::resolve_seed(r.params, server_seed_, r.id, i);
    auto slot = std::make_unique<SampleSlot>(
        next_seq_id_++, i, SamplingState(r.params, prompt, seed),
        StopChecker(tokenizer_, r.params, eos_ids_, max_new, context, p.request.grammar != nullptr),
        prompt);
    slot->draft_gate =
        spec_.check_costs ? DraftGate(spec_.check_costs) : DraftGate(spec_.config.draft_token_cost);
    if (p.request.grammar) slot->sampling.set_matcher(p.request.grammar->make_matcher());
    if (budget) slot->sampling.set_reasoning_budget(*budget);
    by_seq_[slot->seq_id] = {&r, slot.get()};
    r.samples.push_back(std::move(slot));
  }
  active_.emplace(r.id, std::move(req));

  if (r.deadline && *r.deadline <= Clock::now()) {
    end_request(r.id, FinishReason::kTimeout);
    return;
  }
  for (const auto& slot : r.samples) {
    Request sr;
    sr.id = slot->seq_id;
    sr.arrival_time = r.arrival;
    sr.priority = p.request.priority;
    sr.prompt_token_ids = prompt;
    sr.max_tokens = r.params.max_tokens;
    sr.group_id = n > 1 ? r.id : 0;
    sr.score_prompt = slot->index == 0 && r.params.prompt_logprobs >= 0;
    sr.pool = r.pooling.has_value();
    sr.cache_key = p.request.cache_salt;
    sr.image_spans = r.image_spans;
    for (const PromptImage& im : r.images) sr.image_hashes.push_back(im.content_hash);
    plan_kv_transfer(r, p.request.kv_transfer, prompt, sr);
    Status st = scheduler_->add_request(std::move(sr));
    if (!st.is_ok()) {
      end_request(r.id, FinishReason::kError, std::move(st));
      return;
    }
  }
}

void StepLoop::end_request(uint64_t id, FinishReason reason, Status error) {
  if (auto h = held_.find(id); h != held_.end()) {  // waiting for read-ahead: admit, then end
    PendingSubmit p = std::move(h->second.submit);
    held_.erase(h);
    admit(std::move(p));
  }
  auto it = active_.find(id);
  if (it == active_.end()) return;
  ActiveRequest& req = *it->second;
  // Aborted past its deadline: the deadline ended it (a gRPC deadline cancels the call at the
  // same instant as this loop's own deadline check would), so it counts as a timeout.
  if (reason == FinishReason::kAbort && req.deadline && *req.deadline <= Clock::now()) {
    reason = FinishReason::kTimeout;
  }
  for (const auto& slot : req.samples) {
    if (slot->finished()) continue;
    (void)scheduler_->finish(slot->seq_id, reason);  // kNotFound when never added: fine
    cancel_remote_pull(slot->seq_id);
    deliver(req, *slot, final_output(req, *slot, reason, error));
  }
}

void StepLoop::check_streams_and_deadlines(Clock::time_point now) {
  std::vector<std::pair<uint64_t, FinishReason>> ends;
  for (const auto& [id, req] : active_) {
    if (req->done()) continue;
    if (req->stream_failed || req->stream->cancelled()) {
      ends.emplace_back(id, FinishReason::kAbort);
    } else if (req->deadline && *req->deadline <= now) {
      ends.emplace_back(id, FinishReason::kTimeout);
    }
  }
  for (const auto& [id, reason] : ends) end_request(id, reason);
  collect_garbage();
}

void StepLoop::abort_all() {
  std::vector<uint64_t> ids;
  for (const auto& [id, held] : held_) ids.push_back(id);
  for (uint64_t id : ids) end_request(id, FinishReason::kAbort);
  ids.clear();
  for (const auto& [id, req] : active_) ids.push_back(id);
  for (uint64_t id : ids) end_request(id, FinishReason::kAbort);
  collect_garbage();
}

void StepLoop::deliver(ActiveRequest& req, SampleSlot& slot, StepOutput out) {
  const bool last = out.finish != FinishReason::kNone;
  if (last && req.kv_produce) attach_handoff(req, slot, out);
  if (slot.index == 0 && req.params.prompt_logprobs >= 0 && !req.prompt_logprobs_sent) {
    out.prompt_logprobs = std::move(req.prompt_logprobs);
    req.prompt_logprobs_sent = true;
  }
  // The external id stops aborting the request before its reader can see the end: a cancel sent
  // after the client has the whole response finds nothing (404), not a finished request.
  if (last && req.done() && on_ended_) on_ended_(req.id, req.external_id);
  // After an overflow only the final record is still queued (the reader may yet drain it).
  if ((!req.stream_failed || last) && !req.stream->push(std::move(out)) && !req.stream_failed) {
    req.stream_failed = true;
    failed_streams_.push_back(req.id);
  }
  if (last) on_sample_finished(req, slot);
}

void StepLoop::on_sample_finished(ActiveRequest& req, SampleSlot& slot) {
  if (spec_.proposer != nullptr) spec_.proposer->release(slot.seq_id);
  const auto now = Clock::now();
  if (slot.index == 0 && slot.first_token) {
    metrics_.request_decode_time.observe(seconds(now - *slot.first_token));
  }
  if (!req.done()) return;
  req.stream->close();
  metrics_.e2e_request_latency.observe(seconds(now - req.arrival));
  ++finished_by_reason_[static_cast<size_t>(req.samples[0]->finish)];
  done_.push_back(req.id);
}

void StepLoop::collect_garbage() {
  for (uint64_t id : failed_streams_) end_request(id, FinishReason::kAbort);
  failed_streams_.clear();
  for (uint64_t id : done_) {
    auto it = active_.find(id);
    if (it == active_.end()) continue;
    for (const auto& slot : it->second->samples) by_seq_.erase(slot->seq_id);
    active_.erase(it);
  }
  done_.clear();
}

void StepLoop::record_first_schedule(ActiveRequest& req, SampleSlot& slot,
                                     const ScheduledRequest& s, Clock::time_point now) {
  if (slot.first_scheduled) return;
  slot.first_scheduled = now;
  if (slot.index != 0) return;
  req.num_cached_prompt_tokens = std::max(s.request->num_cached_tokens, 0);
  prompt_tokens_ += static_cast<uint64_t>(req.num_prompt_tokens);
  metrics_.request_queue_time.observe(seconds(now - req.arrival));
}

void StepLoop::fail_step(const SchedulerOutput& out, const Status& error) {
  for (const ScheduledRequest& s : out.scheduled) {
    auto it = by_seq_.find(s.request_id);
    if (it == by_seq_.end()) continue;
    end_request(it->second.req->id, FinishReason::kError, error);
  }
}

bool StepLoop::step() {
  const auto t_propose = Clock::now();
  propose_drafts();
  const auto t0 = Clock::now();
  const SchedulerOutput& out = scheduler_->schedule();
  start_remote_pulls(out);
  if (out.empty()) return false;
  ++steps_;
  if (spec_.proposer != nullptr) {
    for (uint64_t seq : out.preempted_ids) spec_.proposer->release(seq);
  }
  entries_.clear();
  bool orphans = false;  // cannot happen: every scheduler request is ours
  for (const ScheduledRequest& s : out.scheduled) {
    if (!by_seq_.contains(s.request_id)) {
      orphans = true;
      (void)scheduler_->finish(s.request_id, FinishReason::kError);
    }
  }
  if (orphans) {
    fail_step(out, internal_error("a scheduled request has no engine state"));
    collect_garbage();
    return true;
  }
  for (const ScheduledRequest& s : out.scheduled) {
    const SampleRef& ref = by_seq_.at(s.request_id);
    record_first_schedule(*ref.req, *ref.slot, s, t0);
    BatchEntry e{ref.slot->tokens, s.num_computed_tokens, s.num_new_tokens, s.block_table,
                 s.sample};
    e.drafts = s.draft_tokens;
    e.num_scored = s.num_scored;
    e.num_prompt = ref.req->num_prompt_tokens;
    e.pool = s.pool;
    if (!ref.req->image_spans.empty()) {
      e.image_spans = ref.req->image_spans;
      e.image_features = ref.req->image_features;
      e.image_hidden = runner_->config().hidden_size;
    }
    entries_.push_back(e);
  }
  Result<ForwardBatch> batch = builder_.build(entries_);
  const auto t1 = Clock::now();
  // Logits rows in entry order, which is the order of the batch's: an entry's scored prompt
  // rows, then its sampled ones (with d drafts, d + 1 rows chained by its drafts).
  sample_rows_.clear();
  for (const ScheduledRequest& s : out.scheduled) {
    const SampleRef& ref = by_seq_.at(s.request_id);
    for (int32_t i = 0; i < s.num_scored; ++i) {
      SampleRow row{nullptr, &ref.req->params, &ref.slot->sampling, -1};
      row.score = ref.slot->tokens[static_cast<size_t>(s.num_computed_tokens + i + 1)];
      sample_rows_.push_back(row);
    }
    if (!s.sample) continue;
    for (int32_t j = 0; j <= s.num_draft_tokens(); ++j) {
      const int32_t draft = j < s.num_draft_tokens() ? s.draft_tokens[static_cast<size_t>(j)] : -1;
      sample_rows_.push_back(SampleRow{nullptr, &ref.req->params, &ref.slot->sampling, draft});
    }
  }
  Result<std::vector<SampleResult>> sampled =
      batch.is_ok() ? runner_->execute_and_sample(*batch, sample_rows_, sampler_)
                    : Result<std::vector<SampleResult>>(batch.status());
  const auto t2 = Clock::now();
  if (!sampled.is_ok()) {
    fail_step(out, sampled.status());
    collect_garbage();
    return true;
  }
  results_ = std::move(sampled).value();
  gather_accepted(out);
  const auto t3 = Clock::now();
  const std::vector<FinishedRequest>& finished = scheduler_->update(out, sampled_, num_accepted_);
  auto scheduler_finish = [&finished](uint64_t seq) {
    for (const FinishedRequest& f : finished) {
      if (f.request_id == seq) return f.reason;
    }
    return FinishReason::kNone;
  };
  const auto t4 = Clock::now();

  size_t k = 0;
  for (size_t entry = 0; entry < out.scheduled.size(); ++entry) {
    const ScheduledRequest& s = out.scheduled[entry];
    const SampleRef ref = by_seq_.at(s.request_id);
    ActiveRequest& req = *ref.req;
    SampleSlot& slot = *ref.slot;
    const FinishReason sched_end = scheduler_finish(s.request_id);
    if (s.sample) {
      deliver_tokens(s, first_row_[k], num_accepted_[k], sched_end, t4);
      ++k;
    } else if (s.pool && !slot.finished()) {
      deliver(req, slot, pooled_output(req, slot, entry, s));
    } else if (sched_end != FinishReason::kNone && !slot.finished()) {
      deliver(req, slot, final_output(req, slot, sched_end));  // prompt-only request
    }
  }
  metrics_.iteration_tokens.observe(out.stats.num_scheduled_tokens);
  collect_garbage();
  const auto t5 = Clock::now();

  std::lock_guard<std::mutex> lock(timings_mu_);
  ++timings_.steps;
  timings_.propose_s += seconds(t0 - t_propose);
  timings_.schedule_s += seconds(t1 - t0) + seconds(t4 - t3);
  timings_.model_s += seconds(t2 - t1);
  timings_.sample_s += seconds(t3 - t2);
  timings_.output_s += seconds(t5 - t4);
  timings_.tokens += static_cast<uint64_t>(out.stats.num_scheduled_tokens);
  timings_.decode_tokens += static_cast<uint64_t>(out.stats.num_decode_tokens);
  if (out.stats.num_prefill_tokens == 0) {
    ++timings_.decode_only_steps;
    timings_.decode_only_s += seconds(t5 - t_propose);
    timings_.decode_only_tokens += static_cast<uint64_t>(out.stats.num_decode_tokens);
  }
  return true;
}

void StepLoop::gather_accepted(const SchedulerOutput& out) {
  sampled_.clear();
  num_accepted_.clear();
  first_row_.clear();
  size_t row = 0;
  for (const ScheduledRequest& s : out.scheduled) {
    if (s.num_scored > 0) {
      keep_prompt_logprobs(s, row);
      row += static_cast<size_t>(s.num_scored);
    }
    if (!s.sample) continue;
    const auto rows = static_cast<size_t>(s.num_draft_tokens()) + 1;
    int32_t kept = 0;
    while (static_cast<size_t>(kept) < rows && row + static_cast<size_t>(kept) < results_.size() &&
           results_[row + static_cast<size_t>(kept)].token_id >= 0) {
      sampled_.push_back(results_[row + static_cast<size_t>(kept)].token_id);
      ++kept;
    }
    first_row_.push_back(row);
    num_accepted_.push_back(kept);
    row += rows;
    if (s.num_draft_tokens() == 0) continue;
    const int32_t accepted = std::max(kept - 1, 0);
    ++spec_num_drafts_;
    spec_num_draft_tokens_ += static_cast<uint64_t>(s.num_draft_tokens());
    spec_num_accepted_tokens_ += static_cast<uint64_t>(accepted);
    for (int32_t p = 0; p < accepted && static_cast<size_t>(p) < spec_accepted_per_position_.size();
         ++p) {
      ++spec_accepted_per_position_[static_cast<size_t>(p)];
    }
    const SampleRef& ref = by_seq_.at(s.request_id);
    ref.slot->draft_gate.observe(s.num_draft_tokens(), accepted);
    ActiveRequest& req = *ref.req;
    req.draft_tokens += s.num_draft_tokens();
    req.accepted_draft_tokens += accepted;
    ++req.verify_steps;
  }
}

// Appends the scored rows [row, row + num_scored) of one entry to its request's prompt logprobs;
// rows scored before (a prompt recomputed after a preemption) are skipped.
void StepLoop::keep_prompt_logprobs(const ScheduledRequest& s, size_t row) {
  ActiveRequest& req = *by_seq_.at(s.request_id).req;
  for (int32_t i = 0; i < s.num_scored && row + static_cast<size_t>(i) < results_.size(); ++i) {
    std::optional<TokenLogprob>& lp = results_[row + static_cast<size_t>(i)].logprob;
    const auto pos = static_cast<size_t>(s.num_computed_tokens + i);
    if (req.prompt_logprobs_sent || pos != req.prompt_logprobs.size() || !lp) continue;
    req.prompt_logprobs.push_back(std::move(*lp));
  }
}

// Streams the tokens that stand for one sampling entry, one StepOutput each, up to where the
// scheduler's length stop or the stop checker ends the sample.
void StepLoop::deliver_tokens(const ScheduledRequest& s, size_t first_row, int32_t count,
                              FinishReason sched_end, Clock::time_point now) {
  const SampleRef ref = by_seq_.at(s.request_id);
  ActiveRequest& req = *ref.req;
  SampleSlot& slot = *ref.slot;
  if (slot.finished()) return;
  // Only the last sampled token can be one the grammar refused: drafts are cut to the grammar.
  const int32_t refused = slot.sampling.grammar_refused() ? count - 1 : -1;
  const Request* sr = scheduler_->find(s.request_id);
  if (sr != nullptr) count = std::min(count, sr->num_output_tokens() - slot.num_generated);
  if (count <= 0) return;
  if (slot.first_token) {
    metrics_.inter_token_latency.observe(seconds(now - *slot.last_token));
  } else {
    slot.first_token = now;
    if (slot.index == 0) {
      metrics_.time_to_first_token.observe(seconds(now - req.arrival));
      metrics_.request_prefill_time.observe(seconds(now - *slot.first_scheduled));
    }
  }
  slot.last_token = now;
  for (int32_t i = 0; i < count && !slot.finished(); ++i) {
    if (i == refused) {
      end_request(req.id, FinishReason::kError,
                  invalid_argument("the request's grammar came to a dead end after " +
                                   std::to_string(slot.num_generated) +
                                   " generated tokens: no token can continue it, so no output "
                                   "can match it (is it satisfiable by this model's tokens?)"));
      return;
    }
    SampleResult& r = results_[first_row + static_cast<size_t>(i)];
    StepOutput o = token_output(req, slot, r.token_id, std::move(r.logprob),
                                i + 1 == count ? sched_end : FinishReason::kNone);
    ++generation_tokens_;
    if (slot.finished() && sched_end == FinishReason::kNone) {
      (void)scheduler_->finish(slot.seq_id, slot.finish);
    }
    deliver(req, slot, std::move(o));
  }
}

int64_t StepLoop::waiting_prompt_tokens() const {
  int64_t n = 0;
  for (const auto& [seq, ref] : by_seq_) {
    const Request* r = scheduler_->find(seq);
    if (r != nullptr &&
        (r->status == RequestStatus::kWaiting || r->status == RequestStatus::kPreempted)) {
      n += r->num_tokens();
    }
  }
  return n;
}

void StepLoop::fill_stats(EngineStats& s) const {
  const KvCacheManager& kv = scheduler_->kv_cache();
  s.requests_running = scheduler_->num_running();
  s.requests_waiting = scheduler_->num_waiting();
  s.kv_blocks_total = kv.num_usable_blocks();
  s.kv_blocks_free = kv.num_free_blocks();
  s.kv_cache_cached_blocks = kv.pool().num_cached_blocks();
  s.kv_blocks_released_by_window = static_cast<uint64_t>(kv.window_released_blocks());
  s.kv_capacity_tokens = int64_t{kv.num_usable_blocks()} * kv.block_size();
  s.kv_bytes_per_token = runner_->config().kv_bytes_per_token(runner_->kv_dtype());
  s.kv_cache_usage_ratio = kv.usage();
  s.waiting_prompt_tokens = waiting_prompt_tokens();
  s.steps = steps_;
  s.prompt_tokens = prompt_tokens_;
  s.pooling_requests = pooled_requests_;
  s.generation_tokens = generation_tokens_;
  s.preemptions = static_cast<uint64_t>(scheduler_->num_preemptions());
  s.prefix_cache_queries = static_cast<uint64_t>(kv.prefix_cache_queries());
  s.prefix_cache_hits = static_cast<uint64_t>(kv.prefix_cache_hits());
  s.finished_by_reason = finished_by_reason_;
  s.spec_num_drafts = spec_num_drafts_;
  s.spec_num_draft_tokens = spec_num_draft_tokens_;
  s.spec_num_accepted_tokens = spec_num_accepted_tokens_;
  s.spec_accepted_per_position = spec_accepted_per_position_;
  s.spec_draft_blocks_held = spec_.proposer != nullptr ? spec_.proposer->num_blocks_held() : 0;
  if (kv_agent_ != nullptr) s.kv_transfer = kv_agent_->stats();
  if (offloader_ != nullptr) {
    const KvOffloadStats o = offloader_->stats();
    s.kv_offload_enabled = true;
    s.kv_tier_disk_bytes = o.disk.bytes;
    s.kv_tier_disk_on = offloader_->disk() != nullptr;
    s.kv_tier_disk_budget_bytes = s.kv_tier_disk_on ? offloader_->disk()->budget_bytes() : 0;
    if (const KvHostTier* host = offloader_->host()) {
      s.kv_tier_host_budget_bytes = host->budget_bytes();
      s.kv_tier_host_bytes = o.host.bytes;
      s.kv_tier_host_pages = o.host.pages;
      s.kv_tier_host_hits = static_cast<uint64_t>(o.host_hits);
      s.kv_tier_host_misses = static_cast<uint64_t>(o.host_misses);
      s.kv_tier_host_bytes_written = static_cast<uint64_t>(o.host_bytes_written);
      s.kv_tier_host_bytes_read = static_cast<uint64_t>(o.host_bytes_read);
      s.kv_tier_host_pages_evicted = static_cast<uint64_t>(o.host.evicted_pages);
      s.kv_tier_host_pages_demoted = static_cast<uint64_t>(o.demoted_pages);
    }
    s.kv_tier_disk_pages = o.disk.pages;
    s.kv_tier_disk_hits = static_cast<uint64_t>(o.disk_hits);
    s.kv_tier_disk_misses = static_cast<uint64_t>(o.disk_misses);
    s.kv_tier_bytes_written = static_cast<uint64_t>(o.bytes_written);
    s.kv_tier_bytes_read = static_cast<uint64_t>(o.bytes_read);
    s.kv_tier_pages_evicted = static_cast<uint64_t>(o.disk.evicted_pages);
    s.kv_tier_pages_corrupt = static_cast<uint64_t>(o.disk.corrupt_pages);
    s.kv_tier_pages_foreign = static_cast<uint64_t>(o.disk.foreign_pages);
    s.kv_tier_pages_rejected = static_cast<uint64_t>(o.rejected_pages);
    s.kv_tier_pages_dropped = static_cast<uint64_t>(o.dropped_pages);
    s.kv_tier_pages_loaded = static_cast<uint64_t>(o.disk.loaded_pages);
    s.kv_tier_blocks_restored = blocks_restored_;
    s.kv_tier_preempted_restores = preempted_restores_;
  }
}

StepTimings StepLoop::step_timings() const {
  std::lock_guard<std::mutex> lock(timings_mu_);
  return timings_;
}

}  // namespace llmserve
