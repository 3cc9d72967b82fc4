// End-to-end runs of the benchmark against FakeOpenAiServer. Timing assertions are one-sided
// (never faster than the scripted delays) or generous, since the machine may be loaded.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "bench/serve/arrival.h"
#include "bench/serve/http_driver.h"
#include "bench/serve/runner.h"
#include "bench/serve/serving_benchmark.h"
#include "tests/unit/bench/fake_openai_server.h"

namespace llmserve::bench {
namespace {

// A port nothing listens on: bound to pick it, then closed.
int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return 1;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

FakeScript script(int first_delay_ms, int gap_ms, int status = 200, std::string key = "") {
  FakeScript s;
  s.first_delay_ms = first_delay_ms;
  s.gap_ms = gap_ms;
  s.status = status;
  s.api_key = std::move(key);
  return s;
}

BenchConfig small_config(const std::string& url) {
  BenchConfig c;
  c.url = url;
  c.num_requests = 8;
  c.max_concurrency = 4;
  c.input_len = 16;
  c.output_len = 5;
  c.progress = false;
  c.seed = 1;
  return c;
}

TEST(HttpBench, EndToEndCountsAndLatencies) {
  FakeOpenAiServer server(script(40, 10));
  BenchConfig c = small_config(server.url());
  c.warmup = 2;
  c.goodput = "e2el:60000";
  c.json_out = ::testing::TempDir() + "bench_http_e2e.json";
  std::ostringstream table;
  auto s = run_serving_benchmark(c, table);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();

  EXPECT_EQ(server.requests_seen(), 10);  // warm-up requests are sent but not counted
  EXPECT_EQ(s->completed, 8);
  EXPECT_EQ(s->failed, 0) << (s->errors.empty() ? "" : s->errors[0]);
  EXPECT_EQ(s->total_output_tokens, 40);
  EXPECT_EQ(s->total_input_tokens, 8 * 16);
  EXPECT_LE(server.max_in_flight(), 4);

  EXPECT_GE(s->ttft_ms.median, 40.0);
  EXPECT_GE(s->ttft_ms.p99, s->ttft_ms.median);
  EXPECT_LT(s->ttft_ms.mean, 10000.0);
  EXPECT_GE(s->e2el_ms.median, 80.0);  // 40 ms + 4 gaps of 10 ms, at least
  EXPECT_GT(s->e2el_ms.mean, s->ttft_ms.mean);
  EXPECT_GT(s->itl_ms.mean, 0.0);
  EXPECT_LT(s->itl_ms.mean, 10000.0);
  EXPECT_GT(s->tpot_ms.mean, 0.0);
  EXPECT_GE(s->duration_s, 0.16);  // two waves of 4 requests, each >= 80 ms
  ASSERT_TRUE(s->goodput);
  EXPECT_DOUBLE_EQ(*s->goodput, s->request_throughput);
  EXPECT_NEAR(s->output_throughput, 40 / s->duration_s, 1e-9);

  EXPECT_NE(table.str().find("Successful requests:"), std::string::npos);
  EXPECT_NE(table.str().find("Mean TTFT (ms):"), std::string::npos);

  std::ifstream f(c.json_out);
  const auto j = nlohmann::json::parse(f);
  for (const char* k : {"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"}) {
    for (const char* q : {"mean", "median", "p90", "p99"}) {
      EXPECT_TRUE(j[k][q].is_number()) << k << "." << q;
    }
  }
  EXPECT_EQ(j["completed"], 8);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_TRUE(j["request_throughput"].is_number());
  EXPECT_TRUE(j["goodput"].is_number());
  EXPECT_EQ(j["config"]["max_concurrency"], 4);
  EXPECT_EQ(j["config"]["output_len"], 5);
  std::remove(c.json_out.c_str());
}

TEST(HttpBench, SendsStreamingTokenIdRequests) {
  FakeOpenAiServer server(script(0, 0));
  BenchConfig c = small_config(server.url());
  c.num_requests = 2;
  c.model = "smol";
  std::ostringstream table;
  ASSERT_TRUE(run_serving_benchmark(c, table).is_ok());
  const auto bodies = server.bodies();
  ASSERT_EQ(bodies.size(), 2u);
  for (const auto& b : bodies) {
    EXPECT_EQ(b["model"], "smol");
    EXPECT_EQ(b["stream"], true);
    EXPECT_EQ(b["stream_options"]["include_usage"], true);
    EXPECT_EQ(b["ignore_eos"], true);
    EXPECT_EQ(b["max_tokens"], 5);
    ASSERT_TRUE(b["prompt"].is_array());
    EXPECT_EQ(b["prompt"].size(), 16u);
  }
}

TEST(HttpBench, PoissonArrivalsAreNeverEarly) {
  FakeOpenAiServer server(script(1, 1));
  auto target = parse_http_url(server.url());
  ASSERT_TRUE(target.is_ok());
  SyntheticWorkload w;
  w.num_requests = 6;
  w.input_len = 4;
  w.output_len = 2;
  auto reqs = make_synthetic_workload(w);
  RunOptions opts;
  opts.request_rate = 40;
  opts.seed = 9;
  int progress_calls = 0;
  opts.on_progress = [&](int, int total) {
    EXPECT_EQ(total, 6);
    ++progress_calls;
  };
  const RunOutput out = run_benchmark(
      {}, *reqs, [&](const BenchRequest& r) { return send_http_completion(*target, r); }, opts);
  const auto offsets = poisson_arrival_offsets(6, 40, 9);
  ASSERT_EQ(out.results.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_TRUE(out.results[i].success) << out.results[i].error;
    EXPECT_GE(out.results[i].start_s, offsets[i]);
  }
  EXPECT_GE(out.duration_s, offsets.back());
  EXPECT_EQ(progress_calls, 7);  // 0/6 and once per request
}

TEST(HttpBench, ServerErrorsAreCountedAsFailures) {
  FakeOpenAiServer server(script(0, 0, 429));
  BenchConfig c = small_config(server.url());
  std::ostringstream table;
  auto s = run_serving_benchmark(c, table);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->completed, 0);
  EXPECT_EQ(s->failed, 8);
  ASSERT_FALSE(s->errors.empty());
  EXPECT_NE(s->errors[0].find("HTTP 429"), std::string::npos) << s->errors[0];
  EXPECT_NE(s->errors[0].find("scripted failure"), std::string::npos);
  EXPECT_NE(table.str().find("HTTP 429"), std::string::npos);
}

TEST(HttpBench, ApiKeyIsSentAsBearer) {
  FakeOpenAiServer server(script(0, 0, 200, "sekrit"));
  BenchConfig c = small_config(server.url());
  c.num_requests = 2;
  std::ostringstream table;
  c.api_key = "sekrit";
  EXPECT_EQ(run_serving_benchmark(c, table)->completed, 2);
  c.api_key = "wrong";
  auto s = run_serving_benchmark(c, table);
  EXPECT_EQ(s->failed, 2);
  EXPECT_NE(s->errors.at(0).find("HTTP 401"), std::string::npos);
}

TEST(HttpBench, UnreachableServerFailsEachRequest) {
  const int port = unused_port();
  BenchConfig c = small_config("http://127.0.0.1:" + std::to_string(port));
  c.num_requests = 3;
  c.timeout_s = 5;
  std::ostringstream table;
  auto s = run_serving_benchmark(c, table);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->failed, 3);
  EXPECT_NE(s->errors.at(0).find("transport"), std::string::npos) << s->errors.at(0);
}

TEST(HttpBench, BadConfigurationIsAnError) {
  std::ostringstream table;
  BenchConfig c = small_config("127.0.0.1:8000");
  EXPECT_FALSE(run_serving_benchmark(c, table).is_ok());  // no scheme
  c = small_config("http://127.0.0.1:1");
  c.goodput = "ttft=5";
  EXPECT_FALSE(run_serving_benchmark(c, table).is_ok());
  c = small_config("http://127.0.0.1:1");
  c.num_requests = 0;
  EXPECT_FALSE(run_serving_benchmark(c, table).is_ok());
}

TEST(HttpBench, ParseUrl) {
  auto t = parse_http_url("http://localhost:8000");
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->scheme_host_port, "http://localhost:8000");
  EXPECT_EQ(t->path, "/v1/completions");
  t = parse_http_url("https://h:1/custom/v1/completions");
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->scheme_host_port, "https://h:1");
  EXPECT_EQ(t->path, "/custom/v1/completions");
  EXPECT_EQ(parse_http_url("http://h:1/")->path, "/v1/completions");
  EXPECT_FALSE(parse_http_url("ftp://h").is_ok());
  EXPECT_FALSE(parse_http_url("http://").is_ok());
}

}  // namespace
}  // namespace llmserve::bench
