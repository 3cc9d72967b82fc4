#include "engine/scheduler/scheduler.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace llmserve {

Result<std::unique_ptr<Scheduler>> Scheduler::create(const SchedulerConfig& config,
                                                     KvCacheManager kv_cache) {
  LLMSERVE_RETURN_IF_ERROR(config.validate());
  return std::unique_ptr<Scheduler>(new Scheduler(config, std::move(kv_cache)));
}

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager kv_cache)
    : config_(config), kv_(std::move(kv_cache)) {
  running_.reserve(config_.max_num_seqs);
  output_.scheduled.reserve(config_.max_num_seqs);
}

Status Scheduler::add_request(Request request) {
  const std::string who = "request " + std::to_string(request.id) + ": ";
  if (requests_.contains(request.id)) return invalid_argument(who + "duplicate id");
  if (request.prompt_token_ids.empty()) return invalid_argument(who + "empty prompt");
  if (request.max_tokens < 0) return invalid_argument(who + "max_tokens must be >= 0");
  if (request.num_prompt_tokens() >= config_.max_model_len) {
    return invalid_argument(who + "prompt has " + std::to_string(request.num_prompt_tokens()) +
                            " tokens; max_model_len is " + std::to_string(config_.max_model_len));
  }
  if (request.image_spans.size() != request.image_hashes.size()) {
    return invalid_argument(who + "image spans and content hashes differ in number");
  }
  for (size_t k = 0; k < request.image_spans.size(); ++k) {
    const ImageSpan& s = request.image_spans[k];
    if (s.length < 1 || s.start < 0 || s.end() >= request.num_prompt_tokens() ||
        (k > 0 && s.start < request.image_spans[k - 1].end())) {
      return invalid_argument(who + "image " + std::to_string(k) +
                              " lies outside the prompt's rows or overlaps another");
    }
    // An image runs in one step: the step's token budget must hold it.
    if (s.length > config_.max_num_batched_tokens) {
      return invalid_argument(who + "an image of " + std::to_string(s.length) +
                              " tokens does not fit one step (max_num_batched_tokens " +
                              std::to_string(config_.max_num_batched_tokens) + ")");
    }
  }
  if (!request.image_spans.empty() && request.score_prompt) {
    return invalid_argument(who + "prompt logprobs are not available for a prompt with images");
  }
  if (request.pool && (request.max_tokens != 0 || request.score_prompt ||
                       request.num_prompt_tokens() > config_.max_num_batched_tokens)) {
    return invalid_argument(who + "a pooling request samples nothing and its prompt (" +
                            std::to_string(request.num_prompt_tokens()) +
                            " tokens) must fit one step (max_num_batched_tokens " +
                            std::to_string(config_.max_num_batched_tokens) + ")");
  }
  const int64_t max_len = std::min<int64_t>(
      int64_t{request.num_prompt_tokens()} + request.max_tokens, config_.max_model_len);
  const int64_t max_blocks = (max_len + kv_.block_size() - 1) / kv_.block_size();
  if (max_blocks > kv_.num_usable_blocks()) {
    return resource_exhausted(who + "needs up to " + std::to_string(max_blocks) +
                              " KV blocks; the cache has " +
                              std::to_string(kv_.num_usable_blocks()));
  }
  request.arrival_seq = next_arrival_seq_++;
  request.status = RequestStatus::kWaiting;
  request.finish_reason = FinishReason::kNone;
  request.num_computed_tokens = 0;
  request.num_cached_tokens = -1;
  request.num_preemptions = 0;
  request.kv = {};
  auto owned = std::make_unique<Request>(std::move(request));
  waiting_.insert(owned.get());
  requests_.emplace(owned->id, std::move(owned));
  return Status::ok();
}

Status Scheduler::abort_request(uint64_t id) {
  if (!requests_.contains(id)) return not_found("request " + std::to_string(id) + ": unknown id");
  pending_aborts_.push_back(id);
  return Status::ok();
}

Status Scheduler::finish(uint64_t id, FinishReason reason) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second->is_finished()) {
    return not_found("request " + std::to_string(id) + ": unknown or finished");
  }
  finish_request(*it->second, reason);
  return Status::ok();
}

Status Scheduler::set_draft_tokens(uint64_t id, std::span<const int32_t> drafts) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second->is_finished()) {
    return not_found("request " + std::to_string(id) + ": unknown or finished");
  }
  Request& r = *it->second;
  if (r.status != RequestStatus::kRunning || !r.is_decoding()) {
    return failed_precondition("request " + std::to_string(id) + ": not decoding");
  }
  r.draft_token_ids.assign(drafts.begin(), drafts.end());
  return Status::ok();
}

const Request* Scheduler::find(uint64_t id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

void Scheduler::finish_request(Request& request, FinishReason reason) {
  if (request.status == RequestStatus::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), &request));
    if (request.hold_kv && (reason == FinishReason::kLength || reason == FinishReason::kStop) &&
        request.num_computed_tokens >= request.num_prompt_tokens()) {
      const int32_t bs = kv_.block_size();
      const auto n = static_cast<size_t>((request.num_prompt_tokens() + bs - 1) / bs);
      std::vector<int32_t> blocks(request.kv.block_ids.begin(), request.kv.block_ids.begin() + n);
      if (std::find(blocks.begin(), blocks.end(), kNullBlockId) == blocks.end()) {
        kv_.pin(blocks);
        held_[request.id] = std::move(blocks);
      }
    }
  } else if (request.status == RequestStatus::kRemoteKv) {
    remote_.erase(std::find(remote_.begin(), remote_.end(), &request));
    kv_.pin(request.kv.block_ids);  // a transfer may still write them
    orphaned_[request.id] = request.kv.block_ids;
  } else {
    waiting_.erase(&request);
  }
  kv_.free(request);
  request.status = RequestStatus::kFinished;
  request.finish_reason = reason;
  finished_since_step_.push_back({request.id, reason});
  finished_to_erase_.push_back(request.id);
}

void Scheduler::preempt(Request& request) {
  kv_.free(request);
  request.draft_token_ids.clear();
  request.num_computed_tokens = 0;
  request.status = RequestStatus::kPreempted;
  request.tier_hold = false;
  request.tier_asked = false;
  ++request.num_preemptions;
  ++total_preemptions_;
  waiting_.insert(&request);
  output_.preempted_ids.push_back(request.id);
}

void Scheduler::emit(Request& request, int32_t num_new_tokens, bool is_new) {
  ScheduledRequest s;
  s.request = &request;
  s.request_id = request.id;
  s.num_computed_tokens = request.num_computed_tokens;
  s.num_new_tokens = num_new_tokens;
  s.block_table = kv_.block_table(request);
  if (request.is_decoding()) s.draft_tokens = request.draft_token_ids;
  if (request.score_prompt) {
    const int32_t end =
        std::min(request.num_computed_tokens + num_new_tokens, request.num_prompt_tokens() - 1);
    s.num_scored = std::max(end - request.num_computed_tokens, 0);
    scored_this_step_ += s.num_scored;
  }
  s.sample =
      request.num_computed_tokens + num_new_tokens - s.num_draft_tokens() == request.num_tokens() &&
      request.max_tokens > 0;
  s.is_new = is_new;
  s.pool = request.pool;
  output_.scheduled.push_back(s);
  auto& st = output_.stats;
  st.num_scheduled_tokens += num_new_tokens;
  st.num_draft_tokens += s.num_draft_tokens();
  if (request.is_decoding()) {
    st.num_decode_tokens += num_new_tokens;
  } else {
    st.num_prefill_tokens += num_new_tokens;
  }
}

const SchedulerOutput& Scheduler::schedule() {
  for (uint64_t id : finished_to_erase_) requests_.erase(id);
  finished_to_erase_.clear();

  output_.step++;
  output_.scheduled.clear();
  output_.preempted_ids.clear();
  output_.remote_kv_starts.clear();
  output_.stats = {};
  for (uint64_t id : pending_aborts_) {
    auto it = requests_.find(id);
    if (it != requests_.end() && !it->second->is_finished()) {
      finish_request(*it->second, FinishReason::kAbort);
    }
  }
  pending_aborts_.clear();
  output_.finished.swap(finished_since_step_);
  finished_since_step_.clear();

  int32_t budget = config_.max_num_batched_tokens;
  scored_this_step_ = 0;
  schedule_running(budget);
  if (output_.preempted_ids.empty()) schedule_waiting(budget);

  auto& st = output_.stats;
  st.num_scheduled_requests = static_cast<int32_t>(output_.scheduled.size());
  st.num_running = num_running();
  st.num_waiting = num_waiting();
  st.num_preempted = static_cast<int32_t>(output_.preempted_ids.size());
  st.kv_usage = kv_.usage();
  return output_;
}

void Scheduler::schedule_running(int32_t& budget) {
  int32_t pending_decodes = 0;
  for (const Request* r : running_) pending_decodes += r->is_decoding();

  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Request& r = *running_[i];
    int32_t num_new;
    if (r.is_decoding()) {
      --pending_decodes;
      const int32_t room =
          std::min(budget - 1 - pending_decodes, r.draft_room(config_.max_model_len));
      if (static_cast<int32_t>(r.draft_token_ids.size()) > room) {
        r.draft_token_ids.resize(static_cast<size_t>(std::max(room, 0)));
      }
      num_new = 1 + static_cast<int32_t>(r.draft_token_ids.size());
    } else {
      r.draft_token_ids.clear();
      // Leave one token of budget for each decode still to come in this loop.
      const int32_t left = r.num_uncomputed_tokens();
      num_new = std::min(left, budget - pending_decodes);
      if (r.score_prompt) {
        num_new = std::min(num_new, score_room(r));
        if (num_new <= 0) continue;
      } else if (num_new <= 0 || (!config_.enable_chunked_prefill && num_new < left)) {
        continue;
      }
      num_new = image_chunk(r, r.num_computed_tokens, num_new, budget - pending_decodes);
      if (num_new <= 0) continue;  // an image that does not fit what is left of this step
    }
    bool scheduled = true;
    while (!kv_.allocate(r, num_new)) {
      if (!r.draft_token_ids.empty()) {  // drafts never cost anyone a preemption
        r.draft_token_ids.clear();
        num_new = 1;
        continue;
      }
      Request* victim = running_.back();
      running_.pop_back();
      if (victim != &r && victim->is_decoding()) --pending_decodes;
      preempt(*victim);
      if (victim == &r) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled) break;
    emit(r, num_new, /*is_new=*/false);
    budget -= num_new;
  }
}

// A prefill chunk of r from `start` of at most num_new tokens, cut so it never splits an image:
// it ends before the image it would split, or, starting at (or inside) one, runs to that image's
// end, which must fit `room` (0 when it does not: the request waits for a later step).
int32_t Scheduler::image_chunk(const Request& r, int32_t start, int32_t num_new,
                               int32_t room) const {
  if (r.image_spans.empty() || num_new <= 0) return num_new;
  const int32_t n = image_safe_chunk_end(r.image_spans, start, start + num_new) - start;
  return n <= room ? n : 0;
}

// New tokens a scoring request may run this step: its scored rows must fit in what is left of
// max_scored_tokens_per_step (the row that samples, when the chunk ends the prompt, is extra).
int32_t Scheduler::score_room(const Request& r) const {
  const int32_t room = config_.max_scored_tokens_per_step - scored_this_step_;
  if (room <= 0) return 0;
  const int32_t to_score = r.num_prompt_tokens() - 1 - r.num_computed_tokens;
  return to_score <= room ? r.num_uncomputed_tokens() : room;
}

// Prompt tokens a group sibling could take from the prefix cache: its full blocks, less the
// block holding the last prompt token (always computed).
int32_t Scheduler::shareable_prompt_tokens(const Request& r) const {
  const int32_t bs = kv_.block_size();
  return (r.num_prompt_tokens() - 1) / bs * bs;
}

bool Scheduler::group_is_prefilling(uint64_t group_id) {
  return std::find(prefilling_groups_.begin(), prefilling_groups_.end(), group_id) !=
         prefilling_groups_.end();
}

void Scheduler::schedule_waiting(int32_t& budget) {
  const bool gate_groups = kv_.prefix_caching_enabled();
  bool groups_known = false;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (num_running() + num_remote_kv() >= config_.max_num_seqs) break;
    Request& r = **it;
    if (r.remote_kv && r.status == RequestStatus::kWaiting) {
      if (!r.remote_kv_open) {
        ++it;  // waits for its producer's answer without a block or a slot
        continue;
      }
      const CachedPrefix prefix = kv_.find_cached_prefix(r);
      if (!kv_.allocate(r, r.num_prompt_tokens() - prefix.num_tokens, prefix)) break;
      it = waiting_.erase(it);
      start_remote_kv(r, prefix);
      continue;
    }
    if (budget <= 0) break;
    if (r.tier_hold) {
      ++it;  // its pages are being read back from a lower tier
      continue;
    }
    // Offered once there is room for all of its blocks (restored pages would otherwise be
    // evicted again before it runs); held when a restore started, once per preemption.
    if (r.status == RequestStatus::kPreempted && readmit_hook_ && !r.tier_asked &&
        kv_.num_free_blocks() >= (r.num_tokens() + kv_.block_size() - 1) / kv_.block_size() &&
        readmit_hook_(r)) {
      r.tier_asked = true;
      r.tier_hold = true;
      ++it;
      continue;
    }
    if (gate_groups && r.group_id != 0) {
      if (!groups_known) {
        prefilling_groups_.clear();
        for (const Request* q : running_) {
          if (q->group_id != 0 && q->num_computed_tokens < shareable_prompt_tokens(*q)) {
            prefilling_groups_.push_back(q->group_id);
          }
        }
        groups_known = true;
      }
      if (group_is_prefilling(r.group_id)) {
        ++it;
        continue;
      }
    }
    const CachedPrefix prefix =
        r.score_prompt || r.pool ? CachedPrefix{} : kv_.find_cached_prefix(r);
    const int32_t left = r.num_tokens() - prefix.num_tokens;
    int32_t num_new = std::min(left, budget);
    if (r.pool) {
      if (num_new < left) {
        ++it;  // waits for a step with room for its whole prompt; others may go first
        continue;
      }
    } else if (r.score_prompt) {
      num_new = std::min(num_new, score_room(r));
      if (num_new <= 0) {
        ++it;  // waits for a step with scoring room; others may go first
        continue;
      }
    } else if (!config_.enable_chunked_prefill && num_new < left) {
      break;
    }
    num_new = image_chunk(r, prefix.num_tokens, num_new, budget);
    if (num_new <= 0) break;  // its next image waits for a step with room for all of it
    if (!kv_.allocate(r, num_new, prefix)) break;

    it = waiting_.erase(it);
    r.num_computed_tokens = prefix.num_tokens;
    if (r.num_cached_tokens < 0) r.num_cached_tokens = prefix.num_tokens;
    r.status = RequestStatus::kRunning;
    running_.insert(std::upper_bound(running_.begin(), running_.end(), &r, ArrivalOrder{}), &r);
    if (gate_groups && r.group_id != 0 && r.num_computed_tokens < shareable_prompt_tokens(r)) {
      prefilling_groups_.push_back(r.group_id);
    }
    emit(r, num_new, /*is_new=*/true);
    budget -= num_new;
  }
}

Status Scheduler::release_tier_hold(uint64_t id) {
  auto it = requests_.find(id);
  if (it == requests_.end() || !it->second->tier_hold) {
    return not_found("no request held for a tier restore with id " + std::to_string(id));
  }
  it->second->tier_hold = false;
  return Status::ok();
}

void Scheduler::start_remote_kv(Request& r, const CachedPrefix& prefix) {
  r.num_computed_tokens = prefix.num_tokens;
  if (r.num_cached_tokens < 0) r.num_cached_tokens = prefix.num_tokens;
  r.status = RequestStatus::kRemoteKv;
  remote_.push_back(&r);
  output_.remote_kv_starts.push_back({r.id, r.kv.block_ids, prefix.num_tokens / kv_.block_size()});
}

Status Scheduler::finish_remote_kv(uint64_t id, bool pulled) {
  if (auto o = orphaned_.find(id); o != orphaned_.end()) {
    kv_.unpin(o->second);
    orphaned_.erase(o);
    return Status::ok();
  }
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second->status != RequestStatus::kRemoteKv) {
    return not_found("request " + std::to_string(id) + ": not waiting for remote KV");
  }
  Request& r = *it->second;
  remote_.erase(std::find(remote_.begin(), remote_.end(), &r));
  r.remote_kv = false;
  if (pulled) {
    r.num_computed_tokens = r.num_prompt_tokens() - 1;
    kv_.cache_computed_blocks(r);
  }
  r.status = RequestStatus::kRunning;
  running_.insert(std::upper_bound(running_.begin(), running_.end(), &r, ArrivalOrder{}), &r);
  return Status::ok();
}

Status Scheduler::open_remote_kv(uint64_t id, bool opened) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second->status != RequestStatus::kWaiting ||
      !it->second->remote_kv) {
    return not_found("request " + std::to_string(id) + ": not waiting to open remote KV");
  }
  Request& r = *it->second;
  if (opened) {
    r.remote_kv_open = true;
  } else {
    r.remote_kv = false;
  }
  return Status::ok();
}

std::vector<int32_t> Scheduler::take_held_blocks(uint64_t id) {
  auto it = held_.find(id);
  if (it == held_.end()) return {};
  std::vector<int32_t> out = std::move(it->second);
  held_.erase(it);
  return out;
}

const std::vector<FinishedRequest>& Scheduler::update(const SchedulerOutput& output,
                                                      std::span<const int32_t> sampled_tokens) {
  return update(output, sampled_tokens, {});
}

const std::vector<FinishedRequest>& Scheduler::update(const SchedulerOutput& output,
                                                      std::span<const int32_t> sampled_tokens,
                                                      std::span<const int32_t> num_tokens) {
  update_finished_.clear();
  size_t next_token = 0;
  size_t next_entry = 0;  // index of the sampling entry
  auto finish_length = [this](Request& r) {
    finish_request(r, FinishReason::kLength);
    update_finished_.push_back({r.id, FinishReason::kLength});
  };
  for (const ScheduledRequest& s : output.scheduled) {
    int32_t count = 0;
    if (s.sample) {
      count = num_tokens.empty() ? 1 : num_tokens[std::min(next_entry, num_tokens.size() - 1)];
      ++next_entry;
    }
    const size_t first = next_token;
    next_token += static_cast<size_t>(std::max(count, 0));
    auto it = requests_.find(s.request_id);
    if (it == requests_.end() || it->second->is_finished()) continue;
    Request& r = *it->second;
    assert(r.num_computed_tokens == s.num_computed_tokens);
    const int32_t num_drafts = s.num_draft_tokens();
    r.draft_token_ids.clear();
    if (!s.sample) {
      r.num_computed_tokens += s.num_new_tokens;
      kv_.cache_computed_blocks(r);
      kv_.free_outside_window(r);
      if (r.max_tokens == 0 && r.num_computed_tokens == r.num_tokens()) finish_length(r);
      continue;
    }
    assert(count >= 1 && count <= num_drafts + 1 && next_token <= sampled_tokens.size());
    count = std::clamp(count, 1, num_drafts + 1);
    if (first + static_cast<size_t>(count) > sampled_tokens.size()) break;
    // The new tokens whose K/V is now valid: all but the drafts, plus the accepted drafts.
    r.num_computed_tokens += s.num_new_tokens - num_drafts + (count - 1);
    bool length_stop = false;
    for (int32_t i = 0; i < count && !length_stop; ++i) {
      r.output_token_ids.push_back(sampled_tokens[first + static_cast<size_t>(i)]);
      length_stop =
          r.num_output_tokens() >= r.max_tokens || r.num_tokens() >= config_.max_model_len;
    }
    r.num_computed_tokens = std::min(r.num_computed_tokens, r.num_tokens());
    kv_.cache_computed_blocks(r);
    kv_.free_outside_window(r);
    if (length_stop) finish_length(r);
  }
  return update_finished_;
}

Status Scheduler::check_invariants() const {
  std::vector<const Request*> holders;
  for (const auto& [id, r] : requests_) {
    const bool running = r->status == RequestStatus::kRunning;
    const bool holds = running || r->status == RequestStatus::kRemoteKv;
    if (!holds && !r->kv.block_ids.empty()) {
      return internal_error("request " + std::to_string(id) + " holds blocks but is not running");
    }
    if (holds) holders.push_back(r.get());
  }
  if (holders.size() != running_.size() + remote_.size()) {
    return internal_error("running list out of sync");
  }
  if (num_running() > config_.max_num_seqs) return internal_error("max_num_seqs exceeded");
  if (!std::is_sorted(running_.begin(), running_.end(), ArrivalOrder{})) {
    return internal_error("running list not in (priority, arrival) order");
  }
  for (const Request* r : waiting_) {
    if (r->status != RequestStatus::kWaiting && r->status != RequestStatus::kPreempted) {
      return internal_error("request " + std::to_string(r->id) + " queued but not waiting");
    }
  }
  return kv_.check_invariants(holders);
}

}  // namespace llmserve
