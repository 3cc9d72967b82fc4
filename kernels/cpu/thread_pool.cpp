#include "llmserve/kernels/thread_pool.h"

#include <immintrin.h>

#include <algorithm>

namespace llmserve::kernels {
namespace {
constexpr int kSpinIters = 20000;
}

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

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* ctx) {
  if (n_tasks <= 0) return;
  const int parts = static_cast<int>(std::min<int64_t>(n_tasks, num_threads_));
  if (parts == 1) {
    fn(ctx, 0, n_tasks);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  n_tasks_ = n_tasks;
  n_parts_ = parts;
  pending_.store(num_threads_ - 1);
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) generation_.notify_all();

  fn(ctx, 0, n_tasks / parts);

  for (int i = 0; pending_.load(std::memory_order_acquire) != 0; ++i) {
    if (i < kSpinIters) {
      _mm_pause();
      continue;
    }
    caller_sleeping_.store(1);
    int p = pending_.load();
    if (p != 0) pending_.wait(p);
    caller_sleeping_.store(0);
  }
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; g == seen && i < kSpinIters; ++i) {
      _mm_pause();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      sleepers_.fetch_add(1);
      generation_.wait(seen);
      sleepers_.fetch_sub(1);
      continue;
    }
    seen = g;
    if (stop_.load()) return;
    if (index < n_parts_) {
      const int64_t b = n_tasks_ * index / n_parts_;
      const int64_t e = n_tasks_ * (index + 1) / n_parts_;
      fn_(ctx_, b, e);
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1 && caller_sleeping_.load()) {
      pending_.notify_one();
    }
  }
}

}  // namespace llmserve::kernels
