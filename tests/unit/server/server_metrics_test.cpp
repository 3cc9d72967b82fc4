#include "server/metrics/server_metrics.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include "server/common/server_state.h"
#include "server/metrics/engine_collector.h"

namespace llmserve {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(EngineCollector, HistogramIsCumulativeWithSumAndCount) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(0.7);
  h.observe(5.0);
  const std::string text = prometheus::TextSerializer().Serialize(
      {histogram_family("lat_seconds", "Latency.", h.snapshot())});
  for (const char* line :
       {"# HELP lat_seconds Latency.", "# TYPE lat_seconds histogram",
        "lat_seconds_bucket{le=\"0.1\"} 1", "lat_seconds_bucket{le=\"1\"} 3",
        "lat_seconds_bucket{le=\"+Inf\"} 4", "lat_seconds_sum 6.25", "lat_seconds_count 4"}) {
    EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
  }
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
                           "llmserve_requests_finished_total{reason=\"timeout\"} 0",
                           "llmserve_preemptions_total",
                           "llmserve_prefix_cache_queries_total",
                           "llmserve_prefix_cache_hits_total",
                           "llmserve_http_requests_total{code=\"200\",route=\"/v1/completions\"} 1",
                           "llmserve_grpc_requests_total{code=\"OK\",method=\"Generate\"} 1",
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
  EXPECT_TRUE(has_line(text, "# TYPE llmserve_http_requests_total counter")) << text;
  EXPECT_TRUE(has_line(text, "# TYPE llmserve_time_to_first_token_seconds histogram")) << text;
}

TEST(ServerMetrics, KnownSeriesExistAtZeroBeforeTheirFirstEvent) {
  ServerMetrics m;
  m.declare_http("/v1/completions", 200);
  m.declare_grpc("Generate", "OK");
  const std::string text = m.render(EngineStats{}, nullptr);
  for (RejectReason r : kRejectReasons) {
    const std::string line =
        std::string("llmserve_requests_rejected_total{reason=\"") + reject_reason_name(r) + "\"} 0";
    EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
  }
  EXPECT_TRUE(
      has_line(text, "llmserve_http_requests_total{code=\"200\",route=\"/v1/completions\"} 0"))
      << text;
  EXPECT_TRUE(has_line(text, "llmserve_grpc_requests_total{code=\"OK\",method=\"Generate\"} 0"))
      << text;
  // Declaring again keeps the count; counting moves the declared series.
  m.count_http("/v1/completions", 200);
  m.declare_http("/v1/completions", 200);
  m.count_grpc("Generate", "OK");
  m.count_rejection("draining");
  const std::string after = m.render(EngineStats{}, nullptr);
  EXPECT_TRUE(
      has_line(after, "llmserve_http_requests_total{code=\"200\",route=\"/v1/completions\"} 1"))
      << after;
  EXPECT_TRUE(has_line(after, "llmserve_grpc_requests_total{code=\"OK\",method=\"Generate\"} 1"));
  EXPECT_TRUE(has_line(after, "llmserve_requests_rejected_total{reason=\"draining\"} 1"));
  EXPECT_TRUE(has_line(after, "llmserve_requests_rejected_total{reason=\"queue_full\"} 0"));
}

// Issue 41 item 11: with speculation off the engine keeps no per-position counts, and the
// dashboard's acceptance-by-position panel showed "no data" instead of 0.
TEST(ServerMetrics, SpecPerPositionSeriesExistsWithSpeculationOff) {
  ServerMetrics m;
  const std::string text = m.render(EngineStats{}, nullptr);
  EXPECT_TRUE(
      has_line(text, "llmserve_spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 0"))
      << text;
  EngineStats on;
  on.spec_accepted_per_position = {5, 2};
  const std::string with = m.render(on, nullptr);
  EXPECT_TRUE(
      has_line(with, "llmserve_spec_decode_num_accepted_tokens_per_pos_total{position=\"1\"} 2"))
      << with;
}

TEST(ServerMetrics, EscapesLabelValues) {
  ServerMetrics m;
  m.count_http("a\"b\\c\nd", 404);
  const std::string text = m.render(EngineStats{}, nullptr);
  EXPECT_TRUE(
      has_line(text, "llmserve_http_requests_total{code=\"404\",route=\"a\\\"b\\\\c\\nd\"} 1"))
      << text;
}

}  // namespace
}  // namespace llmserve

namespace llmserve {
namespace {

TEST(ServerMetrics, VllmNamesCarryTheEngineFiguresOnlyWhenEnabled) {
  ServerMetrics m;
  EngineStats s;
  s.requests_running = 3;
  s.requests_waiting = 7;
  s.kv_cache_usage_ratio = 0.25;
  s.kv_blocks_total = 1234;
  s.prefix_cache_queries = 100;
  s.prefix_cache_hits = 40;
  s.prompt_tokens = 55;
  s.finished_by_reason[static_cast<size_t>(FinishReason::kLength)] = 2;
  EXPECT_EQ(m.render(s, nullptr).find("vllm:"), std::string::npos);
  VllmMetricsInfo info;
  info.model_name = "m";
  info.block_size = 32;
  m.enable_vllm_names(info);
  const std::string text = m.render(s, nullptr);
  const std::string l = "{engine=\"0\",model_name=\"m\"";
  const std::vector<std::string> lines = {
      "vllm:num_requests_running" + l + "} 3",
      "vllm:num_requests_waiting" + l + "} 7",
      "vllm:kv_cache_usage_perc" + l + "} 0.25",
      "vllm:prefix_cache_queries_total" + l + "} 100",
      "vllm:prefix_cache_hits_total" + l + "} 40",
      "vllm:gpu_prefix_cache_hit_rate" + l + "} 0.4",
      "vllm:prompt_tokens_total" + l + "} 55",
      "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"m\"} 2",
      std::string("# TYPE vllm:prompt_tokens_total counter"),
      std::string("vllm:cache_config_info{block_size=\"32\",cache_dtype=\"auto\","
                  "enable_prefix_caching=\"True\",engine=\"0\",gpu_memory_utilization=\"0.9\","
                  "model_name=\"m\",num_cpu_blocks=\"0\",num_gpu_blocks=\"1234\"} 1")};
  for (const std::string& line : lines) {
    EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
  }
  EXPECT_NE(text.find("vllm:lora_requests_info{engine=\"0\",max_lora=\"0\",model_name=\"m\","
                      "running_lora_adapters=\"\",waiting_lora_adapters=\"\"} "),
            std::string::npos);
}

}  // namespace
}  // namespace llmserve
