// Persistent worker pool for the CPU kernels. parallel_for splits [0, n_tasks) statically into
// one contiguous range per thread; the calling thread runs the first range itself. Workers spin
// briefly after each job, then sleep. Usable from one caller thread at a time; not reentrant.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace llmserve::kernels {

class ThreadPool {
 public:
  // num_threads >= 1 counts the caller: num_threads - 1 worker threads are started.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) on disjoint ranges covering [0, n_tasks); returns when all are done.
  // At most min(n_tasks, num_threads) ranges; thread i gets [i*n/T, (i+1)*n/T).
  template <typename Fn>
  void parallel_for(int64_t n_tasks, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    run(
        n_tasks, [](void* ctx, int64_t b, int64_t e) { (*static_cast<F*>(ctx))(b, e); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using TaskFn = void (*)(void*, int64_t, int64_t);
  void run(int64_t n_tasks, TaskFn fn, void* ctx);
  void worker_loop(int index);

  int num_threads_;
  std::vector<std::thread> workers_;
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_tasks_ = 0;
  int n_parts_ = 0;
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  alignas(64) std::atomic<int> pending_{0};
  alignas(64) std::atomic<int> caller_sleeping_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace llmserve::kernels
