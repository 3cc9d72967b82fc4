// EngineIntake without a model: queue limits, stop/shutdown, abort routing, wake-ups.
#include "engine/engine_intake.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace llmserve {
namespace {

PendingSubmit pending(uint64_t id, size_t prompt_tokens, std::string external_id = {}) {
  PendingSubmit p;
  p.id = id;
  p.request.prompt_token_ids.assign(prompt_tokens, 1);
  p.request.external_id = std::move(external_id);
  p.stream = std::make_shared<RequestStream>(id, 1, 8);
  return p;
}

TEST(EngineIntake, DrainsInSubmissionOrderWithAborts) {
  EngineIntake in(0, 0, 0);
  ASSERT_TRUE(in.submit(pending(1, 3)).is_ok());
  ASSERT_TRUE(in.submit(pending(2, 3)).is_ok());
  in.abort(1);
  EXPECT_TRUE(in.has_pending());
  IntakeBatch b = in.drain();
  ASSERT_EQ(b.submits.size(), 2u);
  EXPECT_EQ(b.submits[0].id, 1u);
  EXPECT_EQ(b.submits[1].id, 2u);
  EXPECT_EQ(b.aborts, std::vector<uint64_t>{1});
  EXPECT_FALSE(b.shutdown);
  EXPECT_FALSE(in.has_pending());
}

TEST(EngineIntake, WaitingRequestLimitCountsTheBacklog) {
  EngineIntake in(0, 2, 0);
  ASSERT_TRUE(in.submit(pending(1, 3)).is_ok());
  ASSERT_TRUE(in.submit(pending(2, 3)).is_ok());
  Status full = in.submit(pending(3, 3));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  (void)in.drain();  // the two drained requests still wait in the scheduler
  EXPECT_EQ(in.submit(pending(3, 3)).code(), StatusCode::kResourceExhausted);
  in.set_backlog(0, 1, 3);  // one of them ended
  EXPECT_TRUE(in.submit(pending(3, 3)).is_ok());
}

TEST(EngineIntake, BurstOnAnIdleEngineFillsRunSlotsAndQueueSlots) {
  // Issue 23 item 7: 8 run slots + 8 queue slots take 16 requests at once, before the loop has
  // moved any of them to running; the 17th is over capacity.
  EngineIntake in(8, 8, 0);
  for (uint64_t id = 1; id <= 16; ++id) {
    ASSERT_TRUE(in.submit(pending(id, 3)).is_ok()) << "request " << id;
  }
  EXPECT_EQ(in.submit(pending(17, 3)).code(), StatusCode::kResourceExhausted);
  (void)in.drain();
  EXPECT_EQ(in.num_waiting(), 16);  // drained, not yet reported: still counted
  EXPECT_EQ(in.submit(pending(17, 3)).code(), StatusCode::kResourceExhausted);
  in.set_backlog(8, 8, 24);  // the loop moved 8 to running: the same 16 held
  EXPECT_EQ(in.submit(pending(17, 3)).code(), StatusCode::kResourceExhausted);
  in.set_backlog(7, 8, 24);  // one ended
  EXPECT_TRUE(in.submit(pending(17, 3)).is_ok());
}

TEST(EngineIntake, CapacityCountsSamples) {
  EngineIntake in(2, 2, 0);
  PendingSubmit three = pending(1, 3);
  three.request.params.n = 3;
  ASSERT_TRUE(in.submit(std::move(three)).is_ok());
  EXPECT_EQ(in.num_waiting(), 3);
  PendingSubmit two = pending(2, 3);
  two.request.params.n = 2;
  EXPECT_EQ(in.submit(std::move(two)).code(), StatusCode::kResourceExhausted);  // 5 > 4
  EXPECT_TRUE(in.submit(pending(3, 3)).is_ok());
}

TEST(EngineIntake, WaitingTokenLimitAdmitsAtLeastOne) {
  EngineIntake in(0, 0, 10);
  ASSERT_TRUE(in.submit(pending(1, 50)).is_ok());  // alone, even if over the limit
  EXPECT_EQ(in.submit(pending(2, 1)).code(), StatusCode::kResourceExhausted);
  in.set_backlog(0, 0, 0);
  (void)in.drain();
  in.set_backlog(0, 0, 0);
  EXPECT_TRUE(in.submit(pending(2, 6)).is_ok());
  EXPECT_EQ(in.submit(pending(3, 6)).code(), StatusCode::kResourceExhausted);
}

TEST(EngineIntake, StopAcceptingAndShutdown) {
  EngineIntake in(0, 0, 0);
  in.stop_accepting();
  EXPECT_FALSE(in.accepting());
  EXPECT_EQ(in.submit(pending(1, 1)).code(), StatusCode::kUnavailable);
  in.shutdown();
  EXPECT_TRUE(in.drain().shutdown);
  in.wait();  // returns at once after shutdown
  in.wait_for_shutdown();
}

TEST(EngineIntake, AbortExternalRoutesToEveryLiveRequest) {
  EngineIntake in(0, 0, 0);
  ASSERT_TRUE(in.submit(pending(1, 1, "cmpl-a")).is_ok());
  ASSERT_TRUE(in.submit(pending(2, 1, "cmpl-a")).is_ok());
  ASSERT_TRUE(in.submit(pending(3, 1, "cmpl-b")).is_ok());
  EXPECT_TRUE(in.abort_external("cmpl-a"));
  EXPECT_FALSE(in.abort_external("cmpl-zzz"));
  IntakeBatch b = in.drain();
  std::sort(b.aborts.begin(), b.aborts.end());
  EXPECT_EQ(b.aborts, (std::vector<uint64_t>{1, 2}));
  in.forget(3, "cmpl-b");
  EXPECT_FALSE(in.abort_external("cmpl-b"));
}

TEST(EngineIntake, WaitWakesOnSubmitFromAnotherThread) {
  EngineIntake in(0, 0, 0);
  std::thread t([&in] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    (void)in.submit(pending(9, 1));
  });
  in.wait();
  EXPECT_TRUE(in.has_pending());
  t.join();
  in.wake();
  in.wait();  // the wake flag releases one wait
}

TEST(EngineIntake, WaitWithDeadlineTimesOut) {
  EngineIntake in(0, 0, 0);
  in.wait(std::chrono::steady_clock::now() + std::chrono::milliseconds(5));
  EXPECT_FALSE(in.has_pending());
}

}  // namespace
}  // namespace llmserve
