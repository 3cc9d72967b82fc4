// Persistent worker pool for the CPU kernels. parallel_for splits [0, n_tasks) into chunks that the
// caller and the workers claim from a shared counter, so a worker the OS has not scheduled yet
// delays nothing: whoever runs takes the work (the caller alone, if need be). Chunks shrink as the
// job drains (guided), so the last ones are single tasks. Workers spin briefly after each job,
// then sleep. Usable from one caller thread at a time; not reentrant.
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

  // Calls fn(begin, end) on disjoint ranges covering [0, n_tasks), on any of the threads; returns
  // when all are done. A result must not depend on which range or thread ran a task.
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
  int64_t claim_and_run();  // runs chunks until none is left; returns the tasks it ran

  // The job: written by the caller only while generation_ is odd (closed) and no worker is active.
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_tasks_ = 0;
  alignas(64) std::atomic<uint64_t> generation_{0};  // even: a job is open; odd: being replaced
  alignas(64) std::atomic<int64_t> next_{0};         // first unclaimed task
  alignas(64) std::atomic<int64_t> done_{0};         // tasks finished
  alignas(64) std::atomic<int> active_{0};           // workers inside the open job
  alignas(64) std::atomic<int> sleepers_{0};
  alignas(64) std::atomic<int> caller_sleeping_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace llmserve::kernels
