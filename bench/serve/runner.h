// Drives a list of requests through a request function: arrivals by a seeded Poisson process
// (or all at once), at most `max_concurrency` in flight, one worker thread per in-flight request.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "bench/serve/request_result.h"
#include "bench/serve/workload.h"

namespace llmserve::bench {

using RequestFn = std::function<RequestResult(const BenchRequest&)>;

struct RunOptions {
  int max_concurrency = 0;  // 0 = no limit (capped at kMaxWorkers threads)
  double request_rate = std::numeric_limits<double>::infinity();  // requests/s
  uint64_t seed = 0;
  std::function<void(int done, int total)> on_progress;  // measured phase only; may be empty
};

inline constexpr int kMaxWorkers = 512;

struct RunOutput {
  std::vector<RequestResult> results;  // in request order; start_s relative to the phase start
  double duration_s = 0;               // phase start -> last request finished
};

// Runs `warmup` requests first (all at once within the concurrency limit, results discarded),
// then `requests` on the arrival schedule. `fn` must be safe to call from many threads.
RunOutput run_benchmark(const std::vector<BenchRequest>& warmup,
                        const std::vector<BenchRequest>& requests, const RequestFn& fn,
                        const RunOptions& opts);

}  // namespace llmserve::bench
