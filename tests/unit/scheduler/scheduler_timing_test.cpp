// Prints the scheduler's own cost per step with 256 decoding requests. Reports, never asserts.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include <gtest/gtest.h>

#include "tests/unit/scheduler/scheduler_harness.h"

namespace llmserve {
namespace {

TEST(SchedulerTiming, ReportTimePerStepWith256RunningRequests) {
  SchedulerConfig c;
  c.max_num_batched_tokens = 8192;
  c.max_num_seqs = 256;
  c.max_model_len = 4096;
  auto sched = std::move(Scheduler::create(c, KvCacheManager(256 * 40 + 1, 16)).value());
  for (uint64_t id = 0; id < 256; ++id) {
    ASSERT_TRUE(sched
                    ->add_request(testing::make_request(
                        id, testing::tokens(128, static_cast<int32_t>(id)), 1000))
                    .is_ok());
  }
  std::vector<int32_t> sampled(256, 5);
  for (int i = 0; i < 8; ++i) {  // prefill all
    const auto& out = sched->schedule();
    (void)sched->update(out, std::span<const int32_t>(sampled).first(out.num_sampled()));
  }
  ASSERT_EQ(sched->num_running(), 256);
  using clock = std::chrono::steady_clock;
  constexpr int kSteps = 500;
  std::vector<double> schedule_us, update_us;
  for (int i = 0; i < kSteps; ++i) {
    const auto t0 = clock::now();
    const auto& out = sched->schedule();
    const auto t1 = clock::now();
    (void)sched->update(out, std::span<const int32_t>(sampled).first(out.num_sampled()));
    const auto t2 = clock::now();
    schedule_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    update_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    ASSERT_EQ(out.scheduled.size(), 256u);
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  std::printf(
      "[timing] 256 decoding requests, median of %d steps: schedule() %.2f us, "
      "update() %.2f us\n",
      kSteps, median(schedule_us), median(update_us));
}

}  // namespace
}  // namespace llmserve
