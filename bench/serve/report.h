// The benchmark report: a table for the terminal and a JSON document (`--json-out`).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/serve/bench_config.h"
#include "bench/serve/stats.h"

namespace llmserve::bench {

// Multi-line table in the style of `vllm bench serve`.
std::string format_report_table(const BenchStats& stats, const BenchConfig& config);

// Keys: ttft_ms, tpot_ms, itl_ms, e2el_ms ({mean, median, p90, p99}), request_throughput,
// output_throughput, total_token_throughput, goodput (null without SLOs), completed, failed,
// duration_s, total_input_tokens, total_output_tokens, errors, config.
nlohmann::json report_json(const BenchStats& stats, const BenchConfig& config);

nlohmann::json config_json(const BenchConfig& config);

}  // namespace llmserve::bench
