// Scripted scheduler scenarios with exact expectations.
#include "engine/scheduler/scheduler.h"

#include <gtest/gtest.h>

#include "tests/unit/scheduler/scheduler_harness.h"

namespace llmserve {
namespace {

using testing::expected_outputs;
using testing::Harness;
using testing::make_request;
using testing::tokens;

SchedulerConfig config(int32_t budget, int32_t max_seqs, int32_t max_len = 4096,
                       bool chunked = true) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = max_seqs;
  c.max_model_len = max_len;
  c.enable_chunked_prefill = chunked;
  return c;
}

TEST(Scheduler, RejectsBadConfigAndBadRequests) {
  SchedulerConfig bad = config(8, 16);
  EXPECT_FALSE(Scheduler::create(bad, KvCacheManager(10, 16)).is_ok());
  EXPECT_FALSE(Scheduler::create(config(100, 4, 200, false), KvCacheManager(10, 16)).is_ok());
  auto s = std::move(Scheduler::create(config(64, 4, 128), KvCacheManager(9, 16)).value());
  EXPECT_EQ(s->add_request(make_request(1, {}, 4)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->add_request(make_request(1, tokens(4, 1), -1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->add_request(make_request(1, tokens(128, 1), 4)).code(),
            StatusCode::kInvalidArgument);
  // 127 prompt + up to 1 output = 128 tokens = 8 blocks: fits exactly; 9 blocks would not.
  EXPECT_TRUE(s->add_request(make_request(1, tokens(127, 1), 100)).is_ok());
  EXPECT_EQ(s->add_request(make_request(1, tokens(4, 1), 4)).code(), StatusCode::kInvalidArgument);
  auto small = std::move(Scheduler::create(config(64, 4, 256), KvCacheManager(9, 16)).value());
  EXPECT_EQ(small->add_request(make_request(2, tokens(120, 1), 100)).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(s->abort_request(99).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->finish(99, FinishReason::kStop).code(), StatusCode::kNotFound);
}

TEST(Scheduler, ChunkedPrefillChunksSumToThePromptAndSampleOnlyAtTheEnd) {
  Harness h(config(128, 8), 200);
  h.add(make_request(1, tokens(1000, 1), 3));
  std::vector<int32_t> chunks;
  std::vector<bool> samples;
  while (h.sched->has_unfinished_requests()) {
    const auto& out = h.step();
    ASSERT_EQ(out.scheduled.size(), 1u);
    chunks.push_back(out.scheduled[0].num_new_tokens);
    samples.push_back(out.scheduled[0].sample);
  }
  EXPECT_EQ(chunks, (std::vector<int32_t>{128, 128, 128, 128, 128, 128, 128, 104, 1, 1}));
  EXPECT_EQ(samples,
            (std::vector<bool>{false, false, false, false, false, false, false, true, true, true}));
  EXPECT_EQ(h.tracked[1].outputs, expected_outputs(tokens(1000, 1), 3));
  EXPECT_EQ(h.tracked[1].reason, FinishReason::kLength);
  h.sched->schedule();
  h.expect_all_blocks_free();
}

TEST(Scheduler, WithoutChunkingAPromptThatDoesNotFitWaits) {
  Harness h(config(256, 8, 256, /*chunked=*/false), 100);
  h.add(make_request(1, tokens(200, 1), 4));
  h.add(make_request(2, tokens(100, 2), 4));
  const auto& s1 = h.step();
  ASSERT_EQ(s1.scheduled.size(), 1u);  // 200 + 100 > 256: request 2 waits (FCFS)
  EXPECT_EQ(s1.scheduled[0].num_new_tokens, 200);
  EXPECT_EQ(h.sched->num_waiting(), 1);
  const auto& s2 = h.step();
  ASSERT_EQ(s2.scheduled.size(), 2u);
  EXPECT_EQ(s2.scheduled[1].num_new_tokens, 100);
  EXPECT_EQ(s2.stats.num_decode_tokens, 1);
  EXPECT_EQ(s2.stats.num_prefill_tokens, 100);
}

TEST(Scheduler, PrefixHitsReduceScheduledPrefillTokens) {
  Harness h(config(512, 8), 100);
  const auto shared = tokens(200, 5);
  auto p1 = shared, p2 = shared;
  p1.push_back(1);
  p2.insert(p2.end(), {7, 8, 9});
  h.add(make_request(1, p1, 2));
  h.step();
  h.add(make_request(2, p2, 2));
  const auto& out = h.step();
  ASSERT_EQ(out.scheduled.size(), 2u);
  EXPECT_EQ(out.scheduled[1].request_id, 2u);
  EXPECT_EQ(out.scheduled[1].num_computed_tokens, 192);  // 12 full blocks of 16
  EXPECT_EQ(out.scheduled[1].num_new_tokens, 203 - 192);
  EXPECT_EQ(out.scheduled[0].block_table.subspan(0, 12)[11], out.scheduled[1].block_table[11]);
  EXPECT_EQ(h.sched->kv_cache().prefix_cache_hits(), 192);
  h.run_to_completion();
  EXPECT_EQ(h.tracked[2].outputs, expected_outputs(p2, 2));
  EXPECT_EQ(h.tracked[2].prefill_tokens, 11);
  h.expect_all_blocks_free();
}

TEST(Scheduler, PriorityOrdersAdmissionAndPicksThePreemptionVictim) {
  Harness h(config(64, 1), 100);
  h.add(make_request(1, tokens(10, 1), 2, /*priority=*/5));
  h.add(make_request(2, tokens(10, 2), 2, /*priority=*/0));
  h.add(make_request(3, tokens(10, 3), 2, /*priority=*/5));
  std::vector<uint64_t> order;
  while (h.sched->has_unfinished_requests()) {
    const auto& out = h.step();
    for (const auto& s : out.scheduled) {
      if (s.is_new) order.push_back(s.request_id);
    }
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{2, 1, 3}));

  // 6 usable blocks of 4 tokens. Two running requests need a 7th block: the low-priority
  // (higher value) one is preempted even though it arrived first.
  Harness p(config(64, 4), 7, 4);
  p.add(make_request(10, tokens(11, 1), 8, /*priority=*/1));
  p.add(make_request(11, tokens(11, 2), 8, /*priority=*/0));
  p.step();                    // both prefill 11 tokens: 3 blocks each
  p.step();                    // both decode token 12: still 3 blocks
  const auto& out = p.step();  // both need a 4th block
  EXPECT_EQ(out.preempted_ids, (std::vector<uint64_t>{10}));
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].request_id, 11u);
  p.run_to_completion();
  EXPECT_EQ(p.tracked[10].outputs, expected_outputs(tokens(11, 1), 8));
  EXPECT_EQ(p.tracked[11].outputs, expected_outputs(tokens(11, 2), 8));
  EXPECT_GE(p.tracked[10].preemptions, 1);
  EXPECT_EQ(p.tracked[11].preemptions, 0);
  p.expect_all_blocks_free();
}

// The tiers below the pool: a preempted request coming up for admission is offered to the
// readmit hook once per preemption; held, it waits (no block, nothing scheduled) while others
// run, until release_tier_hold; its tokens are those of a run without the hold.
TEST(Scheduler, APreemptedRequestHeldForATierRestoreWaitsUntilReleased) {
  Harness p(config(64, 4), 7, 4);
  std::vector<uint64_t> asked;
  bool hold = true;
  p.sched->set_readmit_hook([&](const Request& r) {
    asked.push_back(r.id);
    return hold;
  });
  p.add(make_request(10, tokens(11, 1), 8, /*priority=*/1));
  p.add(make_request(11, tokens(11, 2), 8, /*priority=*/0));
  p.step();
  p.step();
  EXPECT_EQ(p.step().preempted_ids, (std::vector<uint64_t>{10}));
  EXPECT_TRUE(asked.empty());  // asked when it comes up for admission, not at the preemption
  // Held until request 11 has finished and three steps more, with room for it all along then.
  int idle_steps = 0;
  for (int steps = 0; asked.empty() || idle_steps < 3; ++steps) {
    ASSERT_LT(steps, 100) << "never offered to the hook";
    const auto& out = p.step();
    for (const auto& s : out.scheduled) EXPECT_NE(s.request_id, 10u) << "held, yet scheduled";
    if (p.tracked[11].reason != FinishReason::kNone) ++idle_steps;
  }
  EXPECT_EQ(asked, (std::vector<uint64_t>{10}));
  EXPECT_TRUE(p.sched->find(10)->tier_hold);
  EXPECT_TRUE(p.sched->find(10)->kv.block_ids.empty());
  EXPECT_EQ(p.sched->release_tier_hold(11).code(), StatusCode::kNotFound);  // not held
  hold = false;
  ASSERT_TRUE(p.sched->release_tier_hold(10).is_ok());
  p.run_to_completion();
  EXPECT_EQ(static_cast<int>(asked.size()), p.tracked[10].preemptions);  // once per preemption
  EXPECT_EQ(p.tracked[10].outputs, expected_outputs(tokens(11, 1), 8));
  EXPECT_EQ(p.tracked[11].outputs, expected_outputs(tokens(11, 2), 8));
  p.expect_all_blocks_free();
}

TEST(Scheduler, AbortFreesBlocksAtTheNextStep) {
  Harness h(config(64, 4), 50);
  h.add(make_request(1, tokens(40, 1), 100));
  h.add(make_request(2, tokens(40, 2), 100));
  h.step();
  h.step();
  const int32_t free_before = h.sched->kv_cache().num_free_blocks();
  ASSERT_TRUE(h.sched->abort_request(1).is_ok());
  EXPECT_EQ(h.sched->kv_cache().num_free_blocks(), free_before);  // not yet
  const auto& out = h.step();
  ASSERT_EQ(out.finished.size(), 1u);
  EXPECT_EQ(out.finished[0].request_id, 1u);
  EXPECT_EQ(out.finished[0].reason, FinishReason::kAbort);
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].request_id, 2u);
  EXPECT_EQ(h.sched->kv_cache().num_free_blocks(), free_before + 3);
  EXPECT_EQ(h.sched->num_running(), 1);
  // Aborting a waiting request works the same way.
  h.add(make_request(3, tokens(10, 3), 5));
  ASSERT_TRUE(h.sched->abort_request(3).is_ok());
  const auto& out2 = h.step();
  ASSERT_EQ(out2.finished.size(), 1u);
  EXPECT_EQ(out2.finished[0].request_id, 3u);
  EXPECT_EQ(h.sched->num_waiting(), 0);
}

TEST(Scheduler, CallerStopAndContextLimit) {
  Harness h(config(64, 4, /*max_len=*/40), 50);
  h.add(make_request(1, tokens(30, 1), 100));  // stops at 40 tokens: 10 outputs
  h.add(make_request(2, tokens(10, 2), 100));
  for (int i = 0; i < 3; ++i) h.step();
  ASSERT_TRUE(h.sched->finish(2, FinishReason::kStop).is_ok());  // e.g. EOS seen by the caller
  h.record_finish(2, FinishReason::kStop);
  EXPECT_EQ(h.sched->find(2)->num_output_tokens(), 3);
  EXPECT_EQ(h.sched->finish(2, FinishReason::kStop).code(), StatusCode::kNotFound);
  const auto& out = h.step();
  ASSERT_EQ(out.finished.size(), 1u);
  EXPECT_EQ(out.finished[0].reason, FinishReason::kStop);
  h.run_to_completion();
  EXPECT_EQ(h.tracked[1].reason, FinishReason::kLength);
  EXPECT_EQ(h.tracked[1].outputs.size(), 10u);
  EXPECT_EQ(h.sched->find(1), nullptr);  // dropped once reported
  h.expect_all_blocks_free();
}

TEST(Scheduler, PromptOnlyRequestComputesThePromptAndSamplesNothing) {
  Harness h(config(64, 4), 50);
  h.add(make_request(1, tokens(100, 1), 0));
  for (int i = 0; i < 2; ++i) {
    const auto& out = h.step();
    ASSERT_EQ(out.scheduled.size(), 1u);
    EXPECT_FALSE(out.scheduled[0].sample);
  }
  EXPECT_EQ(h.tracked[1].reason, FinishReason::kLength);
  EXPECT_TRUE(h.tracked[1].outputs.empty());
  EXPECT_EQ(h.tracked[1].prefill_tokens, 100);
  EXPECT_FALSE(h.sched->has_unfinished_requests());
  h.sched->schedule();
  h.expect_all_blocks_free();
  EXPECT_EQ(h.sched->kv_cache().pool().num_cached_blocks(), 6);  // its full blocks stay cached
}

TEST(Scheduler, ParallelSamplesShareThePromptThroughThePrefixCache) {
  Harness h(config(512, 8), 100);
  const auto prompt = tokens(100, 9);
  for (uint64_t id = 1; id <= 3; ++id) {
    Request r = make_request(id, prompt, 4);
    r.group_id = 77;
    h.add(std::move(r));
  }
  const auto& s1 = h.step();
  ASSERT_EQ(s1.scheduled.size(), 1u);  // siblings wait for the first prompt
  EXPECT_EQ(s1.scheduled[0].num_new_tokens, 100);
  const auto& s2 = h.step();
  ASSERT_EQ(s2.scheduled.size(), 3u);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(s2.scheduled[i].num_computed_tokens, 96);
    EXPECT_EQ(s2.scheduled[i].num_new_tokens, 4);
    for (int b = 0; b < 6; ++b)
      EXPECT_EQ(s2.scheduled[i].block_table[b], s2.scheduled[0].block_table[b]);
  }
  EXPECT_EQ(h.sched->kv_cache().pool().ref_count(s2.scheduled[0].block_table[0]), 3);
  h.run_to_completion();
  h.expect_all_blocks_free();
}

// Sliding window 16, block size 4: a request holds at most the blocks its next query reads (5,
// plus one being filled), so four 140-token requests fit 40 blocks together without a single
// preemption; the same load without the window (all 35 blocks each) must preempt.
TEST(Scheduler, SlidingWindowKeepsOnlyTheBlocksInsideTheWindow) {
  auto run = [](int64_t window) {
    Harness h(config(64, 8), 41, /*block_size=*/4, /*prefix_caching=*/true, window);
    for (uint64_t id = 1; id <= 4; ++id) h.add(make_request(id, tokens(40, id), 100));
    int32_t most_held = 0;
    int steps = 0;
    while (h.sched->has_unfinished_requests() && steps++ < 10000 && !HasFailure()) {
      h.step();
      for (uint64_t id = 1; id <= 4; ++id) {
        const Request* r = h.sched->find(id);
        if (r == nullptr || r->status != RequestStatus::kRunning || !r->is_decoding()) continue;
        int32_t held = 0;
        for (int32_t b : r->kv.block_ids) held += b != kNullBlockId;
        most_held = std::max(most_held, held);
      }
    }
    h.sched->schedule();
    int32_t preemptions = 0;
    for (uint64_t id = 1; id <= 4; ++id) {
      EXPECT_EQ(h.tracked[id].outputs, expected_outputs(tokens(40, id), 100)) << id;
      preemptions += h.tracked[id].preemptions;
    }
    h.expect_all_blocks_free();
    return std::pair{most_held, preemptions};
  };
  const auto [held, preempted] = run(16);
  EXPECT_LE(held, 6);
  EXPECT_EQ(preempted, 0);
  const auto [held_full, preempted_full] = run(0);
  EXPECT_GT(held_full, 6);
  EXPECT_GT(preempted_full, 0);
}

}  // namespace
}  // namespace llmserve
