// The scheduler's side of disaggregated prefill: a remote-KV request takes its prompt's blocks
// without running a step, skips what its prefix cache holds, resumes at the last prompt position
// after a pull (or at its cache hit after a failed one); an ended one keeps its blocks pinned
// until the transfer reports; a producer request keeps its prompt's blocks pinned when it ends.
#include <gtest/gtest.h>

#include "engine/scheduler/scheduler.h"

namespace llmserve {
namespace {

constexpr int32_t kBs = 4;

std::unique_ptr<Scheduler> make(int32_t blocks = 32) {
  SchedulerConfig c;
  c.max_num_batched_tokens = 64;
  c.max_num_seqs = 8;
  c.max_model_len = 128;
  auto s = Scheduler::create(c, KvCacheManager(blocks, kBs));
  EXPECT_TRUE(s.is_ok());
  return std::move(s).value();
}

Request req(uint64_t id, int32_t prompt_len, int32_t first_token = 100, bool remote = false) {
  Request r;
  r.id = id;
  for (int32_t i = 0; i < prompt_len; ++i) r.prompt_token_ids.push_back(first_token + i);
  r.max_tokens = 4;
  r.remote_kv = remote;
  r.remote_kv_open = remote;  // the producer has answered (the usual case below)
  return r;
}

TEST(SchedulerRemoteKv, WaitsWithoutAStepThenRecomputesOnlyTheLastPosition) {
  auto s = make();
  ASSERT_TRUE(s->add_request(req(1, 10, 100, true)).is_ok());
  const SchedulerOutput& out = s->schedule();
  EXPECT_TRUE(out.empty());  // costs no step
  ASSERT_EQ(out.remote_kv_starts.size(), 1u);
  EXPECT_EQ(out.remote_kv_starts[0].block_ids.size(), 3u);  // ceil(10 / 4)
  EXPECT_EQ(out.remote_kv_starts[0].num_cached_blocks, 0);
  EXPECT_EQ(s->find(1)->status, RequestStatus::kRemoteKv);
  EXPECT_TRUE(s->has_unfinished_requests());
  EXPECT_EQ(s->num_waiting(), 1);
  ASSERT_TRUE(s->check_invariants().is_ok());
  EXPECT_TRUE(s->schedule().empty());  // still waiting
  ASSERT_TRUE(s->finish_remote_kv(1, true).is_ok());
  const SchedulerOutput& run = s->schedule();
  ASSERT_EQ(run.scheduled.size(), 1u);
  EXPECT_EQ(run.scheduled[0].num_computed_tokens, 9);
  EXPECT_EQ(run.scheduled[0].num_new_tokens, 1);
  EXPECT_TRUE(run.scheduled[0].sample);
  // The pulled full blocks are in the prefix cache: a twin prompt hits 8 tokens.
  EXPECT_EQ(s->kv_cache().pool().num_cached_blocks(), 2);
  ASSERT_TRUE(s->check_invariants().is_ok());
}

TEST(SchedulerRemoteKv, PrefixCacheHitIsNotPulledAndAFailedPullPrefillsTheRest) {
  auto s = make();
  ASSERT_TRUE(s->add_request(req(1, 9)).is_ok());  // computes and caches 2 full blocks
  const SchedulerOutput& a = s->schedule();
  std::vector<int32_t> tok(a.num_sampled(), 5);
  s->update(a, tok);
  ASSERT_TRUE(s->finish(1, FinishReason::kStop).is_ok());
  ASSERT_TRUE(s->add_request(req(2, 13, 100, true)).is_ok());
  const SchedulerOutput& b = s->schedule();
  ASSERT_EQ(b.remote_kv_starts.size(), 1u);
  EXPECT_EQ(b.remote_kv_starts[0].num_cached_blocks, 2);
  EXPECT_EQ(b.remote_kv_starts[0].block_ids.size(), 4u);
  ASSERT_TRUE(s->finish_remote_kv(2, false).is_ok());
  const SchedulerOutput& c = s->schedule();
  ASSERT_EQ(c.scheduled.size(), 1u);
  EXPECT_EQ(c.scheduled[0].num_computed_tokens, 8);  // the local hit only
  EXPECT_EQ(c.scheduled[0].num_new_tokens, 5);
  ASSERT_TRUE(s->check_invariants().is_ok());
}

TEST(SchedulerRemoteKv, AbortedWhilePullingKeepsBlocksUntilTheTransferReports) {
  auto s = make(8);
  ASSERT_TRUE(s->add_request(req(1, 12, 100, true)).is_ok());
  (void)s->schedule();
  const int32_t free_before = s->kv_cache().num_free_blocks();
  ASSERT_TRUE(s->abort_request(1).is_ok());
  (void)s->schedule();
  EXPECT_FALSE(s->has_unfinished_requests());
  EXPECT_EQ(s->kv_cache().num_free_blocks(), free_before);  // still pinned: a pull may write
  ASSERT_TRUE(s->check_invariants().is_ok());
  ASSERT_TRUE(s->finish_remote_kv(1, false).is_ok());
  EXPECT_EQ(s->kv_cache().num_free_blocks(), s->kv_cache().num_usable_blocks());
  EXPECT_FALSE(s->finish_remote_kv(1, false).is_ok());
}

// While its producer has not answered, a remote-KV request holds no block and no sequence slot:
// another request runs in the only slot (issue 51: a hanging producer held both for 10 s).
TEST(SchedulerRemoteKv, UnopenedRequestHoldsNoBlockOrSlot) {
  SchedulerConfig c;
  c.max_num_batched_tokens = 64;
  c.max_num_seqs = 1;
  c.max_model_len = 128;
  auto made = Scheduler::create(c, KvCacheManager(16, kBs));
  ASSERT_TRUE(made.is_ok());
  auto s = std::move(made).value();
  Request waiting = req(1, 12, 100, true);
  waiting.remote_kv_open = false;
  ASSERT_TRUE(s->add_request(std::move(waiting)).is_ok());
  ASSERT_TRUE(s->add_request(req(2, 5, 300)).is_ok());
  const SchedulerOutput& a = s->schedule();
  EXPECT_TRUE(a.remote_kv_starts.empty());
  ASSERT_EQ(a.scheduled.size(), 1u);
  EXPECT_EQ(a.scheduled[0].request_id, 2u);
  EXPECT_EQ(s->kv_cache().num_free_blocks(), s->kv_cache().num_usable_blocks() - 2);  // 5 tokens
  ASSERT_TRUE(s->check_invariants().is_ok());
  ASSERT_TRUE(s->abort_request(2).is_ok());
  // Opened: admitted to wait for its pull.
  ASSERT_TRUE(s->open_remote_kv(1, true).is_ok());
  const SchedulerOutput& b = s->schedule();
  ASSERT_EQ(b.remote_kv_starts.size(), 1u);
  EXPECT_EQ(b.remote_kv_starts[0].request_id, 1u);
  EXPECT_FALSE(s->open_remote_kv(1, true).is_ok());  // no longer waiting to open
}

TEST(SchedulerRemoteKv, LeaseThatCannotBeOpenedPrefillsLocally) {
  auto s = make();
  Request waiting = req(1, 10, 100, true);
  waiting.remote_kv_open = false;
  ASSERT_TRUE(s->add_request(std::move(waiting)).is_ok());
  EXPECT_TRUE(s->schedule().scheduled.empty());
  ASSERT_TRUE(s->open_remote_kv(1, false).is_ok());
  const SchedulerOutput& b = s->schedule();
  EXPECT_TRUE(b.remote_kv_starts.empty());
  ASSERT_EQ(b.scheduled.size(), 1u);
  EXPECT_EQ(b.scheduled[0].num_new_tokens, 10);  // the whole prompt, computed here
  EXPECT_FALSE(s->open_remote_kv(7, true).is_ok());
}

TEST(SchedulerRemoteKv, ProducerKeepsItsPromptBlocksPinnedWhenItEnds) {
  auto s = make(8);
  Request r = req(1, 6);
  r.max_tokens = 1;
  r.hold_kv = true;
  ASSERT_TRUE(s->add_request(std::move(r)).is_ok());
  const SchedulerOutput& a = s->schedule();
  std::vector<int32_t> tok(a.num_sampled(), 5);
  const auto& fin = s->update(a, tok);
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0].reason, FinishReason::kLength);
  const std::vector<int32_t> held = s->take_held_blocks(1);
  EXPECT_EQ(held.size(), 2u);  // ceil(6 / 4)
  EXPECT_EQ(s->kv_cache().num_free_blocks(), s->kv_cache().num_usable_blocks() - 2);
  ASSERT_TRUE(s->check_invariants().is_ok());
  EXPECT_TRUE(s->take_held_blocks(1).empty());
  s->release_blocks(held);
  EXPECT_EQ(s->kv_cache().num_free_blocks(), s->kv_cache().num_usable_blocks());
  ASSERT_TRUE(s->check_invariants().is_ok());
}

}  // namespace
}  // namespace llmserve
