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
                   EndedFn on_ended)
    : runner_(std::move(runner)),
      scheduler_(std::move(scheduler)),
      tokenizer_(tokenizer),
      metrics_(metrics),
      server_seed_(server_seed),
      on_ended_(std::move(on_ended)),
      eos_ids_(generation_eos_ids(tokenizer, runner_->config())),
      sampler_(static_cast<int32_t>(runner_->config().vocab_size), eos_ids_),
      builder_(runner_->block_size()) {}

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
  const std::vector<int32_t>& prompt = p.request.prompt_token_ids;
  const int32_t max_model_len = scheduler_->config().max_model_len;
  const int32_t max_new = std::min(r.params.max_tokens, max_model_len - r.num_prompt_tokens);
  const size_t ctx = std::min(prompt.size(), kDetokenizerContext);
  const std::span<const int32_t> context(prompt.data() + prompt.size() - ctx, ctx);
  const int32_t n = std::max(r.params.n, 1);
  for (int32_t i = 0; i < n; ++i) {
    const uint64_t seed = SamplingState::resolve_seed(r.params, server_seed_, r.id, i);
    auto slot = std::make_unique<SampleSlot>(
        next_seq_id_++, i, SamplingState(r.params, prompt, seed),
        StopChecker(tokenizer_, r.params, eos_ids_, max_new, context), prompt);
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
    Status st = scheduler_->add_request(std::move(sr));
    if (!st.is_ok()) {
      end_request(r.id, FinishReason::kError, std::move(st));
      return;
    }
  }
}

void StepLoop::end_request(uint64_t id, FinishReason reason, Status error) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  ActiveRequest& req = *it->second;
  for (const auto& slot : req.samples) {
    if (slot->finished()) continue;
    (void)scheduler_->finish(slot->seq_id, reason);  // kNotFound when never added: fine
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
  for (const auto& [id, req] : active_) ids.push_back(id);
  for (uint64_t id : ids) end_request(id, FinishReason::kAbort);
  collect_garbage();
}

void StepLoop::deliver(ActiveRequest& req, SampleSlot& slot, StepOutput out) {
  const bool last = out.finish != FinishReason::kNone;
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
  const auto t0 = Clock::now();
  const SchedulerOutput& out = scheduler_->schedule();
  if (out.empty()) return false;
  ++steps_;
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
    entries_.push_back(
        {ref.slot->tokens, s.num_computed_tokens, s.num_new_tokens, s.block_table, s.sample});
  }
  Result<ForwardBatch> batch = builder_.build(entries_);
  const auto t1 = Clock::now();
  // Sample rows in entry order, which is the order of the batch's sample rows.
  sample_rows_.clear();
  for (const ScheduledRequest& s : out.scheduled) {
    if (!s.sample) continue;
    const SampleRef& ref = by_seq_.at(s.request_id);
    sample_rows_.push_back(SampleRow{nullptr, &ref.req->params, &ref.slot->sampling});
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
  sampled_.clear();
  for (const SampleResult& r : results_) sampled_.push_back(r.token_id);
  const auto t3 = Clock::now();
  const std::vector<FinishedRequest>& finished = scheduler_->update(out, sampled_);
  auto scheduler_finish = [&finished](uint64_t seq) {
    for (const FinishedRequest& f : finished) {
      if (f.request_id == seq) return f.reason;
    }
    return FinishReason::kNone;
  };
  const auto t4 = Clock::now();

  size_t k = 0;
  for (const ScheduledRequest& s : out.scheduled) {
    const SampleRef ref = by_seq_.at(s.request_id);
    ActiveRequest& req = *ref.req;
    SampleSlot& slot = *ref.slot;
    const FinishReason sched_end = scheduler_finish(s.request_id);
    if (s.sample) {
      SampleResult& r = results_[k++];
      if (slot.finished()) continue;
      StepOutput o = token_output(req, slot, r.token_id, std::move(r.logprob), sched_end);
      ++generation_tokens_;
      if (slot.first_token) {
        metrics_.inter_token_latency.observe(seconds(t4 - *slot.last_token));
      } else {
        slot.first_token = t4;
        if (slot.index == 0) {
          metrics_.time_to_first_token.observe(seconds(t4 - req.arrival));
          metrics_.request_prefill_time.observe(seconds(t4 - *slot.first_scheduled));
        }
      }
      slot.last_token = t4;
      if (slot.finished() && sched_end == FinishReason::kNone) {
        (void)scheduler_->finish(slot.seq_id, slot.finish);
      }
      deliver(req, slot, std::move(o));
    } else if (sched_end != FinishReason::kNone && !slot.finished()) {
      deliver(req, slot, final_output(req, slot, sched_end));  // prompt-only request
    }
  }
  metrics_.iteration_tokens.observe(out.stats.num_scheduled_tokens);
  collect_garbage();
  const auto t5 = Clock::now();

  std::lock_guard<std::mutex> lock(timings_mu_);
  ++timings_.steps;
  timings_.schedule_s += seconds(t1 - t0) + seconds(t4 - t3);
  timings_.model_s += seconds(t2 - t1);
  timings_.sample_s += seconds(t3 - t2);
  timings_.output_s += seconds(t5 - t4);
  timings_.tokens += static_cast<uint64_t>(out.stats.num_scheduled_tokens);
  timings_.decode_tokens += static_cast<uint64_t>(out.stats.num_decode_tokens);
  if (out.stats.num_prefill_tokens == 0) {
    ++timings_.decode_only_steps;
    timings_.decode_only_s += seconds(t5 - t0);
    timings_.decode_only_tokens += static_cast<uint64_t>(out.stats.num_decode_tokens);
  }
  return true;
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
  s.kv_cache_usage_ratio = kv.usage();
  s.waiting_prompt_tokens = waiting_prompt_tokens();
  s.steps = steps_;
  s.prompt_tokens = prompt_tokens_;
  s.generation_tokens = generation_tokens_;
  s.preemptions = static_cast<uint64_t>(scheduler_->num_preemptions());
  s.prefix_cache_queries = static_cast<uint64_t>(kv.prefix_cache_queries());
  s.prefix_cache_hits = static_cast<uint64_t>(kv.prefix_cache_hits());
  s.finished_by_reason = finished_by_reason_;
}

StepTimings StepLoop::step_timings() const {
  std::lock_guard<std::mutex> lock(timings_mu_);
  return timings_;
}

}  // namespace llmserve
