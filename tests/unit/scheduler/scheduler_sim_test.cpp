// Long randomized scheduler simulations with the harness's per-step checks.
#include <random>

#include <gtest/gtest.h>

#include "tests/unit/scheduler/scheduler_harness.h"

namespace llmserve {
namespace {

using testing::expected_outputs;
using testing::Harness;
using testing::make_request;
using testing::tokens;

SchedulerConfig sim_config(int32_t budget, int32_t max_seqs, int32_t max_len, bool chunked = true) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = max_seqs;
  c.max_model_len = max_len;
  c.enable_chunked_prefill = chunked;
  return c;
}

TEST(SchedulerSim, DecodesAreNotStarvedByAFloodOfLongPrompts) {
  Harness h(sim_config(512, 64, 8192), 4000);
  for (uint64_t id = 1; id <= 8; ++id) h.add(make_request(id, tokens(20, id), 300));
  for (int i = 0; i < 3; ++i) h.step();  // the 8 are decoding now
  // Half of the flood outranks the decodes: those sort ahead of them in the running order.
  for (uint64_t id = 100; id < 160; ++id) {
    h.add(make_request(id, tokens(3000, id), 2, id % 2 ? -1 : 0));
  }
  for (int i = 0; i < 200; ++i) {
    const auto& out = h.step();
    EXPECT_TRUE(out.preempted_ids.empty());
    if (i < 100) {
      EXPECT_EQ(out.stats.num_scheduled_tokens, 512);  // budget fully used
    }
  }
  // The harness checked each step that all 8 decodes got their token.
  for (uint64_t id = 1; id <= 8; ++id) EXPECT_EQ(h.tracked[id].decode_tokens, 200 + 2);
  h.run_to_completion();
  for (uint64_t id = 100; id < 160; ++id) {
    EXPECT_EQ(h.tracked[id].prefill_tokens, 3000);
    EXPECT_EQ(h.tracked[id].outputs, expected_outputs(tokens(3000, id), 2));
  }
  h.expect_all_blocks_free();
}

TEST(SchedulerSim, PreemptedRequestsFinishWithTheSameTokens) {
  for (bool caching : {true, false}) {
    SCOPED_TRACE(caching);
    Harness h(sim_config(256, 32, 1024), /*num_blocks=*/41, /*block_size=*/16, caching);
    std::mt19937 rng(7);
    for (uint64_t id = 1; id <= 40; ++id) {
      const int32_t len = std::uniform_int_distribution<int32_t>(20, 200)(rng);
      const int32_t max_tokens = std::uniform_int_distribution<int32_t>(1, 200)(rng);
      h.add(make_request(id, tokens(len, static_cast<int32_t>(id)), max_tokens,
                         static_cast<int32_t>(id % 3)));
    }
    const int steps = h.run_to_completion(20000);
    EXPECT_LT(steps, 20000);
    EXPECT_GT(h.sched->num_preemptions(), 0);
    int preempted_requests = 0;
    for (auto& [id, t] : h.tracked) {
      EXPECT_EQ(t.reason, FinishReason::kLength) << id;
      EXPECT_EQ(t.outputs, expected_outputs(t.prompt, t.max_tokens)) << id;
      preempted_requests += t.preemptions > 0;
    }
    EXPECT_GT(preempted_requests, 0);
    h.expect_all_blocks_free();
  }
}

// Random arrivals, aborts, caller stops, priorities, shared prefixes, both chunking modes.
TEST(SchedulerSim, RandomWorkloadKeepsEveryPromise) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    for (bool chunked : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << " chunked " << chunked);
      Harness h(sim_config(chunked ? 192 : 512, 16, 512, chunked), 80, 8);
      std::mt19937 rng(seed);
      auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
      const auto system = tokens(64, 1000 + static_cast<int32_t>(seed));
      uint64_t next_id = 1;
      std::vector<uint64_t> stopped, aborted;
      for (int step = 0; step < 600; ++step) {
        for (int k = uni(0, 2); k > 0 && next_id < 400; --k) {
          std::vector<int32_t> prompt;
          if (uni(0, 1)) prompt = system;
          const auto tail = tokens(uni(1, 250), static_cast<int32_t>(next_id));
          prompt.insert(prompt.end(), tail.begin(), tail.end());
          h.add(make_request(next_id++, prompt, uni(1, 60), uni(0, 2)));
        }
        if (uni(0, 9) == 0 && next_id > 1) {
          const uint64_t id = uni(1, static_cast<int>(next_id - 1));
          const Request* r = h.sched->find(id);
          if (r && !r->is_finished() && h.sched->abort_request(id).is_ok()) aborted.push_back(id);
        }
        h.step();
        if (::testing::Test::HasFailure()) return;
        if (uni(0, 7) == 0) {  // the caller saw EOS on some running request
          for (auto& [id, t] : h.tracked) {
            const Request* r = h.sched->find(id);
            if (r && r->status == RequestStatus::kRunning && r->num_output_tokens() > 0) {
              ASSERT_TRUE(h.sched->finish(id, FinishReason::kStop).is_ok());
              h.record_finish(id, FinishReason::kStop);
              stopped.push_back(id);
              break;
            }
          }
        }
      }
      h.run_to_completion();
      for (auto& [id, t] : h.tracked) {
        ASSERT_NE(t.reason, FinishReason::kNone) << id;
        const auto full = expected_outputs(t.prompt, t.max_tokens);
        if (t.reason == FinishReason::kLength) {
          EXPECT_EQ(t.outputs, full) << id;
        } else {  // stopped or aborted: a prefix of what it would have produced
          EXPECT_EQ(t.outputs, std::vector<int32_t>(full.begin(), full.begin() + t.outputs.size()));
        }
      }
      EXPECT_FALSE(stopped.empty());
      EXPECT_FALSE(aborted.empty());
      EXPECT_LE(h.max_step_tokens, h.sched->config().max_num_batched_tokens);
      if (chunked) {
        EXPECT_EQ(h.max_step_tokens, h.sched->config().max_num_batched_tokens);
      }
      EXPECT_GT(h.sched->kv_cache().prefix_cache_hits(), 0);
      h.expect_all_blocks_free();
    }
  }
}

}  // namespace
}  // namespace llmserve
