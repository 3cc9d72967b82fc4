// The test-only wedge switch (unit_engine_fault links tests/fault/fault_switches.cpp): with
// LLMSERVE_FAULT_WEDGE_ENGINE set the loop stops stepping, so the readiness signals (pending
// work, step age) show it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "tests/unit/engine/engine_test_util.h"

namespace llmserve::testing {
namespace {

TEST(EngineFaultInjection, WedgedLoopStopsSteppingButStillShutsDown) {
  LLMSERVE_REQUIRE_MODEL();
  ::setenv("LLMSERVE_FAULT_WEDGE_ENGINE", "2", 1);
  auto engine = make_engine(small_options());
  ::unsetenv("LLMSERVE_FAULT_WEDGE_ENGINE");
  ASSERT_NE(engine, nullptr);
  GenerateRequest r = make_request(engine->tokenizer().encode("Hello", true, false), 50);
  r.params.ignore_eos = true;
  auto stream = engine->submit(r);
  ASSERT_TRUE(stream.is_ok());
  // Poll (the machine may be slow) until the loop has run its two steps.
  for (int i = 0; i < 3000 && engine->stats().steps < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(engine->stats().steps, 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const EngineStats b = engine->stats();
  EXPECT_EQ(b.steps, 2u);
  EXPECT_GE(b.last_step_age_ms, 250);
  EXPECT_TRUE(b.has_pending_work);
  EXPECT_GE(b.last_step_age_ms, 200);
  engine->shutdown();
  EXPECT_EQ(collect(**stream).samples[0].finish, FinishReason::kAbort);
}

TEST(EngineIdle, StepAgeGrowsWithoutPendingWork) {
  LLMSERVE_REQUIRE_MODEL();
  auto engine = make_engine(small_options());
  ASSERT_NE(engine, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const EngineStats s = engine->stats();
  EXPECT_FALSE(s.has_pending_work);
  EXPECT_EQ(s.steps, 0u);
  EXPECT_GE(s.last_step_age_ms, 40);
}

}  // namespace
}  // namespace llmserve::testing
