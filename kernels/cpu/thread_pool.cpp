#include "llmserve/kernels/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <thread>

namespace llmserve::kernels {
namespace {
constexpr int kSpinIters = 20000;
}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  workers_.reserve(num_threads_ - 1);
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

// Guided chunks: each claim takes 1 / (2 x threads) of what is left, so the last chunks are single
// tasks and a thread that finishes early (or runs late) is not left waiting on a large one.
int64_t ThreadPool::claim_and_run() {
  const int64_t divisor = 2 * int64_t{num_threads_};
  int64_t ran = 0;
  int64_t b = next_.load(std::memory_order_relaxed);
  while (b < n_tasks_) {
    const int64_t c = std::max<int64_t>(1, (n_tasks_ - b) / divisor);
    if (!next_.compare_exchange_weak(b, b + c, std::memory_order_relaxed)) continue;
    fn_(ctx_, b, b + c);
    ran += c;
    b = next_.load(std::memory_order_relaxed);
  }
  return ran;
}

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* ctx) {
  if (n_tasks <= 0) return;
  if (num_threads_ == 1 || n_tasks == 1) {
    fn(ctx, 0, n_tasks);
    return;
  }
  // Close the previous job and wait until no worker is still inside it (they leave as soon as
  // they find no chunk left), then publish this one.
  generation_.fetch_add(1);
  for (int i = 0; active_.load() != 0; ++i) {
    if (i < kSpinIters) {
      _mm_pause();
    } else {
      std::this_thread::yield();
    }
  }
  fn_ = fn;
  ctx_ = ctx;
  n_tasks_ = n_tasks;
  next_.store(0, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) generation_.notify_all();

  const int64_t mine = claim_and_run();
  int64_t d = done_.fetch_add(mine) + mine;
  for (int i = 0; d != n_tasks; ++i) {
    if (i < kSpinIters) {
      _mm_pause();
      d = done_.load(std::memory_order_acquire);
      continue;
    }
    caller_sleeping_.store(1);
    d = done_.load();
    if (d != n_tasks) done_.wait(d);
    caller_sleeping_.store(0);
    d = done_.load();
  }
}

void ThreadPool::worker_loop(int) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; (g == seen || g % 2 == 1) && i < kSpinIters; ++i) {
      _mm_pause();
      g = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    if (g == seen) {
      sleepers_.fetch_add(1);
      generation_.wait(seen);
      sleepers_.fetch_sub(1);
      continue;
    }
    if (g % 2 == 1) continue;  // the caller is replacing the job: look again
    seen = g;
    active_.fetch_add(1);
    if (generation_.load() == g) {
      const int64_t ran = claim_and_run();
      if (ran > 0 && done_.fetch_add(ran) + ran == n_tasks_ && caller_sleeping_.load()) {
        done_.notify_one();
      }
    }
    active_.fetch_sub(1);
  }
}

}  // namespace llmserve::kernels
