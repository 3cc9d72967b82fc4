#include "server/metrics/prometheus_writer.h"

#include <gtest/gtest.h>

#include "server/metrics/server_metrics.h"

namespace llmserve {
namespace {

TEST(PrometheusWriter, EscapesLabelsAndHelp) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(escape_help("x\\y\nz \"q\""), "x\\\\y\\nz \"q\"");
}

TEST(PrometheusWriter, FormatsValues) {
  EXPECT_EQ(format_metric_value(3), "3");
  EXPECT_EQ(format_metric_value(0.25), "0.25");
  EXPECT_EQ(format_metric_value(0.1), "0.1");
  EXPECT_EQ(format_metric_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(format_metric_value(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(format_metric_value(0.0 / 0.0), "NaN");
}

TEST(PrometheusWriter, GaugeCounterAndLabels) {
  PrometheusWriter w;
  w.gauge("g", "A gauge.", 1.5);
  w.header("c_total", "counter", "Counts.");
  w.sample("c_total", {{"route", "/v1/x"}, {"code", "200"}}, 7);
  EXPECT_EQ(w.text(),
            "# HELP g A gauge.\n# TYPE g gauge\ng 1.5\n"
            "# HELP c_total Counts.\n# TYPE c_total counter\n"
            "c_total{route=\"/v1/x\",code=\"200\"} 7\n");
}

TEST(PrometheusWriter, HistogramIsCumulativeWithSumAndCount) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(0.7);
  h.observe(5.0);
  PrometheusWriter w;
  w.histogram("lat_seconds", "Latency.", h.snapshot());
  EXPECT_EQ(w.text(),
            "# HELP lat_seconds Latency.\n# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{le=\"0.1\"} 1\n"
            "lat_seconds_bucket{le=\"1\"} 3\n"
            "lat_seconds_bucket{le=\"+Inf\"} 4\n"
            "lat_seconds_sum 6.25\n"
            "lat_seconds_count 4\n");
}

TEST(ServerMetrics, RendersEveryIssueFiveMetric) {
  ServerMetrics m;
  m.count_http("/v1/completions", 200);
  m.count_grpc("Generate", "OK");
  m.count_rejection("queue_full");
  EngineStats s;
  s.requests_running = 2;
  s.kv_cache_usage_ratio = 0.5;
  s.finished_by_reason[static_cast<size_t>(FinishReason::kStop)] = 3;
  EngineMetrics em;
  em.time_to_first_token.observe(0.02);
  const std::string text = m.render(s, &em);
  for (const char* name : {"llmserve_requests_running 2",
                           "llmserve_requests_waiting 0",
                           "llmserve_kv_cache_usage_ratio 0.5",
                           "llmserve_kv_cache_blocks_total",
                           "llmserve_kv_cache_blocks_free",
                           "llmserve_prompt_tokens_total",
                           "llmserve_generation_tokens_total",
                           "llmserve_requests_finished_total{reason=\"stop\"} 3",
                           "llmserve_preemptions_total",
                           "llmserve_prefix_cache_queries_total",
                           "llmserve_prefix_cache_hits_total",
                           "llmserve_http_requests_total{route=\"/v1/completions\",code=\"200\"} 1",
                           "llmserve_grpc_requests_total{method=\"Generate\",code=\"OK\"} 1",
                           "llmserve_requests_rejected_total{reason=\"queue_full\"} 1",
                           "llmserve_time_to_first_token_seconds_bucket{le=\"0.02\"} 1",
                           "llmserve_time_to_first_token_seconds_count 1",
                           "llmserve_inter_token_latency_seconds_sum",
                           "llmserve_e2e_request_latency_seconds_count",
                           "llmserve_request_queue_time_seconds_count",
                           "llmserve_request_prefill_time_seconds_count",
                           "llmserve_request_decode_time_seconds_count",
                           "llmserve_iteration_tokens_bucket{le=\"8192\"}",
                           "process_resident_memory_bytes ",
                           "process_start_time_seconds "}) {
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
  EXPECT_GT(process_resident_memory_bytes(), 0u);
  // Every sample line's family has exactly one TYPE line.
  EXPECT_EQ(text.find("# TYPE llmserve_requests_running gauge"),
            text.rfind("# TYPE llmserve_requests_running gauge"));
}

}  // namespace
}  // namespace llmserve
