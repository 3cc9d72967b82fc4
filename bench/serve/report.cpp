#include "bench/serve/report.h"

#include <cmath>
#include <cstdio>

namespace llmserve::bench {
namespace {

std::string line(const char* label, double v, int decimals = 2) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%-40s %12.*f\n", label, decimals, v);
  return buf;
}

std::string line(const char* label, const std::string& v) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-40s %12s\n", label, v.c_str());
  return buf;
}

std::string heading(const std::string& title, char fill) {
  const size_t width = 53;
  if (title.empty()) return std::string(width, fill) + "\n";
  const size_t pad = width > title.size() + 2 ? (width - title.size() - 2) : 0;
  return std::string(pad / 2, fill) + " " + title + " " + std::string(pad - pad / 2, fill) + "\n";
}

std::string distribution(const char* name, const char* unit, const Distribution& d) {
  std::string s = heading(std::string(name), '-');
  const std::string n(name);
  s += line(("Mean " + n + " (" + unit + "):").c_str(), d.mean);
  s += line(("Median " + n + " (" + unit + "):").c_str(), d.median);
  s += line(("P90 " + n + " (" + unit + "):").c_str(), d.p90);
  s += line(("P99 " + n + " (" + unit + "):").c_str(), d.p99);
  return s;
}

nlohmann::json dist_json(const Distribution& d) {
  return {{"mean", d.mean}, {"median", d.median}, {"p90", d.p90}, {"p99", d.p99}};
}

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nullptr;
}

}  // namespace

std::string format_report_table(const BenchStats& s, const BenchConfig& c) {
  std::string t = heading("Serving Benchmark Result", '=');
  t += line("Backend:", c.grpc.empty() ? "http" : "grpc");
  t += line("Successful requests:", std::to_string(s.completed));
  t += line("Failed requests:", std::to_string(s.failed));
  t += line("Maximum request concurrency:",
            c.max_concurrency > 0 ? std::to_string(c.max_concurrency) : "unlimited");
  if (std::isfinite(c.request_rate)) {
    t += line("Request rate (req/s):", c.request_rate);
  } else {
    t += line("Request rate (req/s):", "inf");
  }
  t += line("Benchmark duration (s):", s.duration_s);
  t += line("Total input tokens:", std::to_string(s.total_input_tokens));
  t += line("Total generated tokens:", std::to_string(s.total_output_tokens));
  t += line("Request throughput (req/s):", s.request_throughput);
  if (s.goodput) t += line("Request goodput (req/s):", *s.goodput);
  t += line("Output token throughput (tok/s):", s.output_throughput);
  t += line("Total token throughput (tok/s):", s.total_token_throughput);
  t += distribution("TTFT", "ms", s.ttft_ms);
  t += distribution("TPOT", "ms", s.tpot_ms);
  t += distribution("ITL", "ms", s.itl_ms);
  t += distribution("E2EL", "ms", s.e2el_ms);
  if (s.spec_acceptance_rate) {
    t += line("Draft acceptance rate:", *s.spec_acceptance_rate);
    t += line("Mean accepted length:", *s.spec_mean_accepted_length);
  }
  for (const auto& e : s.errors) t += "error: " + e.substr(0, 300) + "\n";
  t += heading("", '=');
  return t;
}

nlohmann::json config_json(const BenchConfig& c) {
  return {{"url", c.url},
          {"grpc", c.grpc},
          {"model", c.model},
          {"num_requests", c.num_requests},
          {"max_concurrency", c.max_concurrency > 0 ? nlohmann::json(c.max_concurrency) : nullptr},
          {"request_rate", number_or_null(c.request_rate)},
          {"input_len", c.input_len},
          {"output_len", c.output_len},
          {"random_range_ratio", c.random_range_ratio},
          {"shared_prefix_len", c.shared_prefix_len},
          {"dataset", c.dataset},
          {"token_id_min", c.token_id_min},
          {"token_id_max", c.token_id_max},
          {"warmup", c.warmup},
          {"seed", c.seed},
          {"goodput", c.goodput}};
}

nlohmann::json report_json(const BenchStats& s, const BenchConfig& c) {
  return {{"ttft_ms", dist_json(s.ttft_ms)},
          {"tpot_ms", dist_json(s.tpot_ms)},
          {"itl_ms", dist_json(s.itl_ms)},
          {"e2el_ms", dist_json(s.e2el_ms)},
          {"request_throughput", s.request_throughput},
          {"output_throughput", s.output_throughput},
          {"total_token_throughput", s.total_token_throughput},
          {"goodput", s.goodput ? nlohmann::json(*s.goodput) : nullptr},
          {"completed", s.completed},
          {"failed", s.failed},
          {"duration_s", s.duration_s},
          {"total_input_tokens", s.total_input_tokens},
          {"total_output_tokens", s.total_output_tokens},
          {"errors", s.errors},
          {"spec_acceptance_rate",
           s.spec_acceptance_rate ? nlohmann::json(*s.spec_acceptance_rate) : nullptr},
          {"spec_mean_accepted_length",
           s.spec_mean_accepted_length ? nlohmann::json(*s.spec_mean_accepted_length) : nullptr},
          {"config", config_json(c)}};
}

}  // namespace llmserve::bench
