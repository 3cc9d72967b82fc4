// `llmserve bench`: the serving benchmark client (bench/serve/) against a running daemon.
#include <charconv>
#include <iostream>
#include <limits>
#include <memory>
#include <string>

#include "bench/serve/serving_benchmark.h"
#include "server/cli/command.h"
#include "server/cli/log_to_stderr.h"

namespace llmserve::cli {
namespace {

struct BenchFlags {
  bench::BenchConfig config;
  std::string request_rate = "inf";
  std::string token_ids = "1000:10000";
  bool no_progress = false;
};

bool parse_rate(const std::string& s, double& out) {
  if (s == "inf" || s == "Inf" || s == "infinity") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out > 0;
}

bool parse_id_range(const std::string& s, int32_t& lo, int32_t& hi) {
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return false;
  auto a = std::from_chars(s.data(), s.data() + colon, lo);
  auto b = std::from_chars(s.data() + colon + 1, s.data() + s.size(), hi);
  return a.ec == std::errc() && a.ptr == s.data() + colon && b.ec == std::errc() &&
         b.ptr == s.data() + s.size();
}

}  // namespace

void add_bench_command(CLI::App& root, int& exit_code) {
  auto f = std::make_shared<BenchFlags>();
  bench::BenchConfig& c = f->config;
  CLI::App* cmd = root.add_subcommand(
      "bench",
      "Benchmark a running llmserve (or any OpenAI-compatible) server: TTFT, TPOT, ITL, "
      "end-to-end latency, throughput and goodput");
  cmd->add_option("--url", c.url, "Server base URL (path defaults to /v1/completions)")
      ->capture_default_str();
  cmd->add_option("--grpc", c.grpc, "HOST:PORT: use the gRPC Generate stream instead of HTTP");
  cmd->add_option("--num-requests", c.num_requests, "Measured requests")->capture_default_str();
  cmd->add_option("--max-concurrency", c.max_concurrency,
                  "Requests in flight at most (0 = unlimited, capped at 512)");
  cmd->add_option("--request-rate", f->request_rate,
                  "Poisson arrival rate in requests/s, or inf for all at once")
      ->capture_default_str();
  cmd->add_option("--input-len", c.input_len, "Prompt tokens (after any shared prefix)")
      ->capture_default_str();
  cmd->add_option("--output-len", c.output_len, "Generated tokens (max_tokens, ignore_eos)")
      ->capture_default_str();
  cmd->add_option("--random-range-ratio", c.random_range_ratio,
                  "Lengths uniform in [len*(1-r), len*(1+r)], r in [0, 1)")
      ->capture_default_str();
  cmd->add_option("--shared-prefix-len", c.shared_prefix_len,
                  "Tokens every prompt starts with (prefix-cache workload)");
  cmd->add_option("--dataset", c.dataset,
                  "JSONL prompts: {\"prompt\": text or ids, \"max_tokens\": n} per line");
  cmd->add_option("--token-id-range", f->token_ids, "MIN:MAX range of random prompt token ids")
      ->capture_default_str();
  cmd->add_option("--warmup", c.warmup, "Warm-up requests sent first and not measured");
  cmd->add_option("--seed", c.seed, "Seed of the workload and the arrival process");
  cmd->add_option("--api-key", c.api_key, "Bearer token")->envname("LLMSERVE_API_KEY");
  cmd->add_option("--model", c.model, "The request's model field");
  cmd->add_option("--goodput", c.goodput,
                  "SLOs in ms for goodput, e.g. ttft:500,tpot:50,e2el:10000");
  cmd->add_option("--timeout", c.timeout_s, "Per-request timeout in seconds")
      ->capture_default_str();
  cmd->add_option("--json-out", c.json_out, "Write the report as JSON to this file");
  cmd->add_flag("--no-progress", f->no_progress, "No progress bar on stderr");
  cmd->callback([f, &exit_code] {
    log_to_stderr();
    bench::BenchConfig cfg = f->config;
    if (!parse_rate(f->request_rate, cfg.request_rate)) {
      std::cerr << "error: --request-rate must be a positive number or inf\n";
      exit_code = 2;
      return;
    }
    if (!parse_id_range(f->token_ids, cfg.token_id_min, cfg.token_id_max)) {
      std::cerr << "error: --token-id-range must be MIN:MAX\n";
      exit_code = 2;
      return;
    }
    cfg.progress = !f->no_progress;
    auto stats = bench::run_serving_benchmark(cfg, std::cout);
    if (!stats.is_ok()) {
      std::cerr << "error: " << stats.status().to_string() << "\n";
      exit_code = stats.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
      return;
    }
    exit_code = stats->completed > 0 ? 0 : 1;
  });
}

}  // namespace llmserve::cli
