// Benchmark statistics over the measured (non-warm-up) requests, as `vllm bench serve` defines
// them: TTFT, TPOT = (e2e - ttft) / (output tokens - 1) for requests with > 1 output token,
// ITL = every gap between token-carrying chunks, e2e latency; throughputs over the wall duration.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/serve/request_result.h"
#include "engine/core/status.h"

namespace llmserve::bench {

// Linear-interpolation percentile (numpy's default): q in [0, 100]; 0 for an empty input.
double percentile(std::vector<double> values, double q);

struct Distribution {  // milliseconds
  double mean = 0;
  double median = 0;
  double p90 = 0;
  double p99 = 0;
};

Distribution summarize_ms(const std::vector<double>& seconds);

// Service-level objectives in milliseconds; a request is "good" when it meets every one given.
struct Slo {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

// "ttft:500,tpot:50,e2el:10000" (any subset, any order) -> Slo.
Result<Slo> parse_slo(const std::string& spec);

// TPOT of one request in seconds; nullopt when it produced fewer than 2 tokens.
std::optional<double> tpot_s(const RequestResult& r);

bool meets_slo(const RequestResult& r, const Slo& slo);

struct BenchStats {
  int completed = 0;
  int failed = 0;
  double duration_s = 0;
  long total_input_tokens = 0;
  long total_output_tokens = 0;
  double request_throughput = 0;      // completed / s
  double output_throughput = 0;       // output tokens / s
  double total_token_throughput = 0;  // (input + output) tokens / s
  std::optional<double> goodput;      // good requests / s; set when the SLO names anything
  Distribution ttft_ms, tpot_ms, itl_ms, e2el_ms;
  std::vector<std::string> errors;  // the first few distinct failure messages
  // From the daemon's /metrics over the run (HTTP targets that speculate).
  std::optional<double> spec_acceptance_rate, spec_mean_accepted_length;
};

BenchStats compute_stats(const std::vector<RequestResult>& results, double duration_s,
                         const Slo& slo);

}  // namespace llmserve::bench
