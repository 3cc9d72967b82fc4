// Pooling requests (Request::pool) in the scheduler: the whole prompt in one step or none (others
// go first meanwhile), no prefix-cache lookup, nothing sampled, blocks freed (full ones cached)
// when the step ends; refused when they could never run.
#include <gtest/gtest.h>

#include "engine/scheduler/scheduler.h"
#include "tests/unit/scheduler/scheduler_harness.h"

namespace llmserve {
namespace {

using testing::Harness;
using testing::make_request;
using testing::tokens;

SchedulerConfig pool_config(int32_t budget) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 8;
  c.max_model_len = 512;
  return c;
}

Request pool_request(uint64_t id, std::vector<int32_t> prompt) {
  Request r = make_request(id, std::move(prompt), 0);
  r.pool = true;
  return r;
}

TEST(SchedulerPool, AWholePromptInOneStepOrWait) {
  Harness h(pool_config(64), 100);
  h.add(make_request(1, tokens(40, 1), 4));  // a chunked prefill takes 40 of 64
  h.add(pool_request(2, tokens(30, 2)));     // 30 > 24 left: waits
  h.add(pool_request(3, tokens(20, 3)));     // fits: goes first
  const auto& s1 = h.step();
  ASSERT_EQ(s1.scheduled.size(), 2u);
  EXPECT_EQ(s1.scheduled[1].request_id, 3u);
  EXPECT_EQ(s1.scheduled[1].num_new_tokens, 20);
  EXPECT_TRUE(s1.scheduled[1].pool);
  EXPECT_FALSE(s1.scheduled[1].sample);
  EXPECT_EQ(h.tracked[3].reason, FinishReason::kLength);  // done after its one step
  const auto& s2 = h.step();
  bool ran = false;
  for (const auto& s : s2.scheduled) {
    if (s.request_id == 2) {
      ran = true;
      EXPECT_EQ(s.num_computed_tokens, 0);
      EXPECT_EQ(s.num_new_tokens, 30);
    }
  }
  EXPECT_TRUE(ran);
  h.run_to_completion();
  h.expect_all_blocks_free();
}

TEST(SchedulerPool, SkipsThePrefixCacheButLeavesItsBlocksCached) {
  Harness h(pool_config(256), 100);
  const auto prompt = tokens(64, 7);
  h.add(make_request(1, prompt, 1));
  h.run_to_completion();
  h.add(pool_request(2, prompt));
  const auto& out = h.step();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].num_computed_tokens, 0);  // every row computed
  EXPECT_EQ(out.scheduled[0].num_new_tokens, 64);
  h.run_to_completion();
  h.expect_all_blocks_free();
}

TEST(SchedulerPool, RefusesWhatCouldNeverRun) {
  auto s = std::move(Scheduler::create(pool_config(64), KvCacheManager(100, 16)).value());
  EXPECT_EQ(s->add_request(pool_request(1, tokens(65, 1))).code(), StatusCode::kInvalidArgument);
  Request sampling = pool_request(2, tokens(10, 1));
  sampling.max_tokens = 1;
  EXPECT_EQ(s->add_request(std::move(sampling)).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s->add_request(pool_request(3, tokens(64, 1))).is_ok());
}

}  // namespace
}  // namespace llmserve
