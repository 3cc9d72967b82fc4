// A fixed set of threads running posted tasks in order, with a bounded queue (a full queue
// refuses the task, so the caller can answer "busy" instead of queueing without bound).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace llmserve {

class WorkerPool {
 public:
  WorkerPool(int threads, size_t max_queued);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // False (and `task` untouched) when the queue is full or the pool is shutting down.
  bool try_post(std::function<void()>& task);
  // Drops the tasks not yet started, waits for the running ones. Idempotent.
  void shutdown();
  size_t queued() const;

 private:
  void run();

  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace llmserve
