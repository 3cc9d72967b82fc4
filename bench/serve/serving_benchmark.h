// `llmserve bench` end to end: build the workload, drive the server over HTTP or gRPC, compute
// the statistics, print the table to `out` and write the JSON report when asked.
#pragma once

#include <ostream>

#include "bench/serve/bench_config.h"
#include "bench/serve/stats.h"
#include "engine/core/status.h"

namespace llmserve::bench {

// Errors only on bad configuration or an unwritable --json-out; failed requests are counted in
// the stats, not returned as errors.
Result<BenchStats> run_serving_benchmark(const BenchConfig& config, std::ostream& out);

}  // namespace llmserve::bench
