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
  EngineIntake in(0, 0);
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
  EngineIntake in(2, 0);
  ASSERT_TRUE(in.submit(pending(1, 3)).is_ok());
  ASSERT_TRUE(in.submit(pending(2, 3)).is_ok());
  Status full = in.submit(pending(3, 3));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  (void)in.drain();  // the two drained requests still wait in the scheduler
  EXPECT_EQ(in.submit(pending(3, 3)).code(), StatusCode::kResourceExhausted);
  in.set_backlog(1, 3);  // one was admitted
  EXPECT_TRUE(in.submit(pending(3, 3)).is_ok());
}

TEST(EngineIntake, WaitingTokenLimitAdmitsAtLeastOne) {
  EngineIntake in(0, 10);
  ASSERT_TRUE(in.submit(pending(1, 50)).is_ok());  // alone, even if over the limit
  EXPECT_EQ(in.submit(pending(2, 1)).code(), StatusCode::kResourceExhausted);
  in.set_backlog(0, 0);
  (void)in.drain();
  in.set_backlog(0, 0);
  EXPECT_TRUE(in.submit(pending(2, 6)).is_ok());
  EXPECT_EQ(in.submit(pending(3, 6)).code(), StatusCode::kResourceExhausted);
}

TEST(EngineIntake, StopAcceptingAndShutdown) {
  EngineIntake in(0, 0);
  in.stop_accepting();
  EXPECT_FALSE(in.accepting());
  EXPECT_EQ(in.submit(pending(1, 1)).code(), StatusCode::kUnavailable);
  in.shutdown();
  EXPECT_TRUE(in.drain().shutdown);
  in.wait();  // returns at once after shutdown
  in.wait_for_shutdown();
}

TEST(EngineIntake, AbortExternalRoutesToEveryLiveRequest) {
  EngineIntake in(0, 0);
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
  EngineIntake in(0, 0);
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
  EngineIntake in(0, 0);
  in.wait(std::chrono::steady_clock::now() + std::chrono::milliseconds(5));
  EXPECT_FALSE(in.has_pending());
}

}  // namespace
}  // namespace llmserve
