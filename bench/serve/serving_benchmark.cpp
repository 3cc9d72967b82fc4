#include "bench/serve/serving_benchmark.h"

#include <unistd.h>

#include <fstream>
#include <memory>

#include "bench/serve/grpc_driver.h"
#include "bench/serve/http_driver.h"
#include "bench/serve/progress_bar.h"
#include "bench/serve/report.h"
#include "bench/serve/runner.h"
#include "bench/serve/spec_metrics.h"
#include "bench/serve/workload.h"

namespace llmserve::bench {
namespace {

Status check_config(const BenchConfig& c) {
  if (c.num_requests < 1) return invalid_argument("--num-requests must be >= 1");
  if (c.max_concurrency < 0) return invalid_argument("--max-concurrency must be >= 0");
  if (!(c.request_rate > 0)) return invalid_argument("--request-rate must be > 0 (or inf)");
  if (c.warmup < 0) return invalid_argument("--warmup must be >= 0");
  if (!(c.timeout_s > 0)) return invalid_argument("--timeout must be > 0");
  return Status::ok();
}

Result<std::vector<BenchRequest>> build_workload(const BenchConfig& c) {
  const int total = c.num_requests + c.warmup;
  if (!c.dataset.empty()) return load_jsonl_workload(c.dataset, total, c.output_len);
  SyntheticWorkload w;
  w.num_requests = total;
  w.input_len = c.input_len;
  w.output_len = c.output_len;
  w.random_range_ratio = c.random_range_ratio;
  w.shared_prefix_len = c.shared_prefix_len;
  w.token_id_min = c.token_id_min;
  w.token_id_max = c.token_id_max;
  w.seed = c.seed;
  return make_synthetic_workload(w);
}

}  // namespace

Result<BenchStats> run_serving_benchmark(const BenchConfig& c, std::ostream& out) {
  LLMSERVE_RETURN_IF_ERROR(check_config(c));
  LLMSERVE_ASSIGN_OR_RETURN(const Slo slo, parse_slo(c.goodput));
  LLMSERVE_ASSIGN_OR_RETURN(auto all, build_workload(c));
  const std::vector<BenchRequest> warmup(all.begin(), all.begin() + c.warmup);
  const std::vector<BenchRequest> measured(all.begin() + c.warmup, all.end());

  RequestFn fn;
  std::optional<HttpTarget> http;
  std::shared_ptr<GrpcDriver> grpc;
  if (!c.grpc.empty()) {
    grpc = std::make_shared<GrpcDriver>(GrpcTarget{c.grpc, c.api_key, c.model, c.timeout_s});
    fn = [grpc](const BenchRequest& r) { return grpc->send(r); };
  } else {
    LLMSERVE_ASSIGN_OR_RETURN(HttpTarget target, parse_http_url(c.url));
    target.api_key = c.api_key;
    target.model = c.model;
    target.timeout_s = c.timeout_s;
    fn = [target](const BenchRequest& r) { return send_http_completion(target, r); };
    http = target;
  }
  const std::optional<SpecCounters> spec_before =
      http ? scrape_spec_counters(*http) : std::optional<SpecCounters>();

  ProgressBar bar(stderr, c.progress && isatty(STDERR_FILENO) == 1);
  RunOptions opts;
  opts.max_concurrency = c.max_concurrency;
  opts.request_rate = c.request_rate;
  opts.seed = c.seed;
  opts.on_progress = [&bar](int done, int total) { bar.update(done, total); };
  const RunOutput run = run_benchmark(warmup, measured, fn, opts);
  bar.finish();

  BenchStats stats = compute_stats(run.results, run.duration_s, slo);
  if (spec_before) {
    if (auto after = scrape_spec_counters(*http)) {
      if (auto spec = summarize_spec(*spec_before, *after)) {
        stats.spec_acceptance_rate = spec->acceptance_rate;
        stats.spec_mean_accepted_length = spec->mean_accepted_length;
      }
    }
  }
  out << format_report_table(stats, c);
  if (!c.json_out.empty()) {
    std::ofstream f(c.json_out);
    if (!f) return not_found("cannot write --json-out " + c.json_out);
    f << report_json(stats, c).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
      << "\n";
    if (!f) return internal_error("failed writing --json-out " + c.json_out);
  }
  return stats;
}

}  // namespace llmserve::bench
