#include "bench/serve/runner.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "bench/serve/arrival.h"

namespace llmserve::bench {
namespace {

using Clock = std::chrono::steady_clock;

RunOutput run_phase(const std::vector<BenchRequest>& reqs, const std::vector<double>& offsets,
                    const RequestFn& fn, int max_concurrency,
                    const std::function<void(int, int)>& on_progress) {
  RunOutput out;
  const int n = static_cast<int>(reqs.size());
  out.results.resize(reqs.size());
  if (n == 0) return out;
  const int limit = max_concurrency > 0 ? std::min(max_concurrency, kMaxWorkers) : kMaxWorkers;
  const int workers = std::min(n, limit);

  std::mutex mu;
  std::condition_variable ready;
  std::deque<int> queue;
  bool closed = false;
  int done = 0;
  Clock::time_point last_end;
  const auto start = Clock::now();
  auto seconds_since = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  if (on_progress) on_progress(0, n);

  std::vector<std::jthread> pool;
  pool.reserve(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (;;) {
        int i = 0;
        {
          std::unique_lock lock(mu);
          ready.wait(lock, [&] { return closed || !queue.empty(); });
          if (queue.empty()) return;
          i = queue.front();
          queue.pop_front();
        }
        const auto sent = Clock::now();
        RequestResult r = fn(reqs[static_cast<size_t>(i)]);
        const auto end = Clock::now();
        r.start_s = seconds_since(start, sent);
        std::lock_guard lock(mu);
        out.results[static_cast<size_t>(i)] = std::move(r);
        last_end = std::max(last_end, end);
        ++done;
        if (on_progress) on_progress(done, n);
      }
    });
  }
  for (int i = 0; i < n; ++i) {
    std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(offsets[i])));
    std::lock_guard lock(mu);
    queue.push_back(i);
    ready.notify_one();
  }
  {
    std::lock_guard lock(mu);
    closed = true;
  }
  ready.notify_all();
  pool.clear();  // joins
  out.duration_s = seconds_since(start, last_end);
  return out;
}

}  // namespace

RunOutput run_benchmark(const std::vector<BenchRequest>& warmup,
                        const std::vector<BenchRequest>& requests, const RequestFn& fn,
                        const RunOptions& opts) {
  if (!warmup.empty()) {
    run_phase(warmup, std::vector<double>(warmup.size(), 0.0), fn, opts.max_concurrency, {});
  }
  const auto offsets =
      poisson_arrival_offsets(static_cast<int>(requests.size()), opts.request_rate, opts.seed);
  return run_phase(requests, offsets, fn, opts.max_concurrency, opts.on_progress);
}

}  // namespace llmserve::bench
