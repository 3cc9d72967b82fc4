#include "llmserve/kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace llmserve::kernels {
namespace {

TEST(ThreadPool, CoversEveryTaskOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {0, 1, 2, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> calls{0};
      pool.parallel_for(n, [&](int64_t b, int64_t e) {
        ++calls;
        EXPECT_LT(b, e);
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
      EXPECT_LE(calls.load(), n);
    }
  }
}

TEST(ThreadPool, ManyBackToBackJobs) {
  ThreadPool pool(2);
  int64_t total = 0;
  for (int rep = 0; rep < 2000; ++rep) {
    std::atomic<int64_t> sum{0};
    pool.parallel_for(4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
    total += sum.load();
  }
  EXPECT_EQ(total, 2000 * 6);
}

}  // namespace
}  // namespace llmserve::kernels

namespace llmserve::kernels {
namespace {

// A slow worker holds only the chunk it claimed: the caller takes the rest of the job.
TEST(ThreadPool, CallerTakesWorkASlowWorkerHasNotClaimed) {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> by_caller{0}, total{0};
  pool.parallel_for(64, [&](int64_t b, int64_t e) {
    const bool on_caller = std::this_thread::get_id() == caller;
    for (int64_t i = b; i < e; ++i) {
      if (!on_caller) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      by_caller += on_caller;
      ++total;
    }
  });
  EXPECT_EQ(total.load(), 64);
  EXPECT_GE(by_caller.load(), 32);
}

TEST(ThreadPool, WakesSleepingWorkers) {
  ThreadPool pool(2);
  for (int rep = 0; rep < 4; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    std::atomic<int> n{0};
    pool.parallel_for(2, [&](int64_t b, int64_t e) { n += static_cast<int>(e - b); });
    EXPECT_EQ(n.load(), 2);
  }
}

}  // namespace
}  // namespace llmserve::kernels
