#include "server/http/worker_pool.h"

namespace llmserve {

WorkerPool::WorkerPool(int threads, size_t max_queued) : max_queued_(max_queued) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WorkerPool::~WorkerPool() {
  shutdown();
}

bool WorkerPool::try_post(std::function<void()>& task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::shutdown() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  dropped.clear();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

size_t WorkerPool::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void WorkerPool::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace llmserve
