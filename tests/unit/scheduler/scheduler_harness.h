// Test driver for the Scheduler: a fake model whose next token is a hash of the request's tokens,
// so a request's outputs do not depend on batching, chunking or preemption (the oracle), plus
// per-step checks of the scheduler's promises.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "engine/scheduler/scheduler.h"

namespace llmserve::testing {

inline int32_t fake_next_token(std::span<const int32_t> prompt, std::span<const int32_t> out) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : prompt) h = (h ^ static_cast<uint32_t>(t)) * 1099511628211ull;
  for (int32_t t : out) h = (h ^ static_cast<uint32_t>(t)) * 1099511628211ull;
  return static_cast<int32_t>(h % 1000);
}

// Outputs the request would produce run alone to its length limit.
inline std::vector<int32_t> expected_outputs(const std::vector<int32_t>& prompt, int32_t n) {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < n; ++i) out.push_back(fake_next_token(prompt, out));
  return out;
}

inline Request make_request(uint64_t id, std::vector<int32_t> prompt, int32_t max_tokens,
                            int32_t priority = 0) {
  Request r;
  r.id = id;
  r.prompt_token_ids = std::move(prompt);
  r.max_tokens = max_tokens;
  r.priority = priority;
  return r;
}

inline std::vector<int32_t> tokens(int32_t n, int32_t seed) {
  std::vector<int32_t> t(n);
  for (int32_t i = 0; i < n; ++i) t[i] = (seed * 7919 + i * 104729) % 997 + 1;
  return t;
}

struct Tracked {
  std::vector<int32_t> prompt;
  int32_t max_tokens = 0;
  int32_t prefill_tokens = 0;   // scheduled while not decoding
  int32_t decode_tokens = 0;    // decode steps
  int32_t draft_tokens = 0;     // drafts scheduled
  int32_t accepted_tokens = 0;  // drafts accepted
  int32_t preemptions = 0;
  int32_t cached_tokens = -1;
  FinishReason reason = FinishReason::kNone;
  std::vector<int32_t> outputs;  // copied when it finishes
};

class Harness {
 public:
  explicit Harness(const SchedulerConfig& config, int32_t num_blocks, int32_t block_size = 16,
                   bool prefix_caching = true, int64_t sliding_window = 0) {
    auto s = Scheduler::create(
        config, KvCacheManager(num_blocks, block_size, prefix_caching, sliding_window));
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    sched = std::move(s.value());
  }

  void add(Request r) {
    Tracked t;
    t.prompt = r.prompt_token_ids;
    t.max_tokens = r.max_tokens;
    const uint64_t id = r.id;
    Status st = sched->add_request(std::move(r));
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    tracked[id] = std::move(t);
  }

  // One schedule + fake forward + update with every check; returns the output.
  const SchedulerOutput& step() {
    const SchedulerConfig& cfg = sched->config();
    // Decoding requests before the step: each must get exactly one token unless preempted.
    std::set<uint64_t> decoding;
    for (const auto& [id, t] : tracked) {
      const Request* r = sched->find(id);
      if (r && r->status == RequestStatus::kRunning && r->is_decoding()) decoding.insert(id);
    }
    if (drafter) {
      for (uint64_t id : decoding) {
        const std::vector<int32_t> d = drafter(*sched->find(id));
        EXPECT_TRUE(sched->set_draft_tokens(id, d).is_ok());
      }
    }
    const SchedulerOutput& out = sched->schedule();
    int32_t total = 0;
    num_tokens.clear();
    std::set<uint64_t> preempted(out.preempted_ids.begin(), out.preempted_ids.end());
    std::set<uint64_t> aborted;
    for (const auto& f : out.finished) {
      aborted.insert(f.request_id);
      if (tracked[f.request_id].reason == FinishReason::kNone)
        record_finish(f.request_id, f.reason);
    }
    sampled.clear();
    for (const ScheduledRequest& s : out.scheduled) {
      const Request& r = *s.request;
      EXPECT_GT(s.num_new_tokens, 0);
      EXPECT_EQ(s.num_computed_tokens, r.num_computed_tokens);
      const int32_t nd = s.num_draft_tokens();
      EXPECT_LE(s.num_computed_tokens + s.num_new_tokens - nd, r.num_tokens());
      EXPECT_GE(static_cast<int64_t>(s.block_table.size()) * sched->kv_cache().block_size(),
                s.num_computed_tokens + s.num_new_tokens);
      EXPECT_EQ(s.sample, s.num_computed_tokens + s.num_new_tokens - nd == r.num_tokens() &&
                              r.max_tokens > 0);
      if (nd > 0) {
        EXPECT_EQ(s.num_new_tokens, 1 + nd);
        EXPECT_LE(r.num_output_tokens() + nd + 1, r.max_tokens);
        EXPECT_LE(r.num_tokens() + nd + 1, cfg.max_model_len);
      }
      EXPECT_FALSE(preempted.contains(s.request_id));
      total += s.num_new_tokens;
      Tracked& t = tracked[s.request_id];
      if (decoding.contains(s.request_id)) {
        EXPECT_EQ(s.num_new_tokens, 1 + nd);
        t.decode_tokens += 1;
        t.draft_tokens += nd;
        decoding.erase(s.request_id);
      } else {
        t.prefill_tokens += s.num_new_tokens;
      }
      if (s.is_new) t.cached_tokens = t.cached_tokens < 0 ? r.num_computed_tokens : t.cached_tokens;
      if (s.sample) {
        // Verification as the engine does it: the model's token at each position, accepted
        // while it equals the draft there.
        std::vector<int32_t> out_so_far = r.output_token_ids;
        int32_t n = 0;
        for (int32_t j = 0; j <= nd; ++j) {
          const int32_t tok = fake_next_token(r.prompt_token_ids, out_so_far);
          sampled.push_back(tok);
          out_so_far.push_back(tok);
          ++n;
          if (j == nd || tok != s.draft_tokens[static_cast<size_t>(j)]) break;
          ++t.accepted_tokens;
        }
        num_tokens.push_back(n);
      }
    }
    for (uint64_t id : decoding) {
      EXPECT_TRUE(preempted.contains(id) || aborted.contains(id))
          << "decode of request " << id << " starved at step " << out.step;
    }
    for (uint64_t id : out.preempted_ids) tracked[id].preemptions++;
    EXPECT_LE(total, cfg.max_num_batched_tokens);
    EXPECT_EQ(total, out.stats.num_scheduled_tokens);
    EXPECT_EQ(out.stats.num_prefill_tokens + out.stats.num_decode_tokens, total);
    EXPECT_LE(sched->num_running(), cfg.max_num_seqs);
    EXPECT_LE(static_cast<int32_t>(out.scheduled.size()), cfg.max_num_seqs);
    max_step_tokens = std::max(max_step_tokens, total);
    for (const auto& f : sched->update(out, sampled, num_tokens)) {
      record_finish(f.request_id, f.reason);
    }
    // Rollback: a running request that has sampled has exactly its last token uncomputed.
    for (const ScheduledRequest& s : out.scheduled) {
      const Request* r = sched->find(s.request_id);
      if (r != nullptr && !r->is_finished() && s.sample) {
        EXPECT_EQ(r->num_uncomputed_tokens(), 1) << "request " << s.request_id;
        EXPECT_TRUE(r->draft_token_ids.empty());
      }
    }
    Status inv = sched->check_invariants();
    EXPECT_TRUE(inv.is_ok()) << inv.to_string();
    return out;
  }

  void record_finish(uint64_t id, FinishReason reason) {
    const Request* r = sched->find(id);
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(r->kv.block_ids.empty());
    tracked[id].reason = reason;
    tracked[id].outputs = r->output_token_ids;
    tracked[id].preemptions = r->num_preemptions;
  }

  // Steps until nothing is left (or max_steps); returns the number of steps.
  int run_to_completion(int max_steps = 100000) {
    int steps = 0;
    while (sched->has_unfinished_requests() && steps < max_steps) {
      step();
      ++steps;
      if (::testing::Test::HasFailure()) break;
    }
    sched->schedule();  // flushes the last finished records
    return steps;
  }

  void expect_all_blocks_free() {
    const auto& kv = sched->kv_cache();
    EXPECT_EQ(kv.num_free_blocks(), kv.num_usable_blocks());
    Status st = kv.check_invariants();
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }

  std::unique_ptr<Scheduler> sched;
  std::map<uint64_t, Tracked> tracked;
  std::vector<int32_t> sampled;
  std::vector<int32_t> num_tokens;  // per sampling entry, for update()
  int32_t max_step_tokens = 0;
  // Drafts for a decoding request before each step (speculation off when unset).
  std::function<std::vector<int32_t>(const Request&)> drafter;
};

}  // namespace llmserve::testing
