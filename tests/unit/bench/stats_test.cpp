#include "bench/serve/stats.h"

#include <gtest/gtest.h>

namespace llmserve::bench {
namespace {

// Oracle: numpy.percentile (linear) on these values, computed once with numpy 1.x/2.x.
const std::vector<double> kValues = {0.35, 0.02, 0.5, 0.11, 0.2, 0.8, 0.04};

TEST(Stats, PercentileMatchesNumpyLinear) {
  EXPECT_DOUBLE_EQ(percentile(kValues, 0), 0.02);
  EXPECT_DOUBLE_EQ(percentile(kValues, 50), 0.2);
  EXPECT_NEAR(percentile(kValues, 90), 0.62, 1e-12);
  EXPECT_NEAR(percentile(kValues, 99), 0.782, 1e-12);
  EXPECT_DOUBLE_EQ(percentile(kValues, 100), 0.8);
  EXPECT_NEAR(percentile(kValues, 37.5), 0.1325, 1e-12);
  EXPECT_EQ(percentile({}, 50), 0.0);
  EXPECT_EQ(percentile({4.0}, 99), 4.0);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 50), 2.5);
}

TEST(Stats, SummarizeInMilliseconds) {
  const Distribution d = summarize_ms(kValues);
  EXPECT_NEAR(d.mean, 288.5714285714286, 1e-9);
  EXPECT_NEAR(d.median, 200, 1e-9);
  EXPECT_NEAR(d.p90, 620, 1e-9);
  EXPECT_NEAR(d.p99, 782, 1e-9);
}

TEST(Stats, ParseSlo) {
  auto s = parse_slo("ttft:500,tpot:50,e2el:10000");
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s->ttft_ms, 500);
  EXPECT_EQ(*s->tpot_ms, 50);
  EXPECT_EQ(*s->e2el_ms, 10000);
  auto only = parse_slo("tpot:12.5");
  ASSERT_TRUE(only.is_ok());
  EXPECT_FALSE(only->ttft_ms);
  EXPECT_EQ(*only->tpot_ms, 12.5);
  EXPECT_FALSE(parse_slo("").value().any());
  EXPECT_FALSE(parse_slo("ttft").is_ok());
  EXPECT_FALSE(parse_slo("ttft:abc").is_ok());
  EXPECT_FALSE(parse_slo("ttft:-1").is_ok());
  EXPECT_FALSE(parse_slo("itl:5").is_ok());
}

RequestResult ok(double ttft, double latency, int out_tokens, int in_tokens,
                 std::vector<double> itl) {
  RequestResult r;
  r.success = true;
  r.ttft_s = ttft;
  r.latency_s = latency;
  r.output_tokens = out_tokens;
  r.prompt_tokens = in_tokens;
  r.itl_s = std::move(itl);
  return r;
}

TEST(Stats, TpotNeedsTwoTokens) {
  EXPECT_NEAR(*tpot_s(ok(0.1, 0.5, 5, 1, {})), 0.1, 1e-12);
  EXPECT_FALSE(tpot_s(ok(0.1, 0.5, 1, 1, {})));
}

TEST(Stats, ComputeStatsByHand) {
  std::vector<RequestResult> rs = {
      ok(0.1, 0.5, 5, 10, {0.1, 0.1, 0.1, 0.1}),  // tpot 0.1
      ok(0.3, 1.3, 11, 20, {0.1, 0.2, 0.7}),      // tpot 0.1
      ok(0.2, 0.2, 1, 30, {}),                    // tpot n/a
  };
  RequestResult bad;
  bad.error = "HTTP 429: queue full";
  rs.push_back(bad);
  rs.push_back(bad);
  Slo slo;
  slo.ttft_ms = 250;
  slo.tpot_ms = 101;
  const BenchStats s = compute_stats(rs, 2.0, slo);
  EXPECT_EQ(s.completed, 3);
  EXPECT_EQ(s.failed, 2);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0], "HTTP 429: queue full");
  EXPECT_EQ(s.total_input_tokens, 60);
  EXPECT_EQ(s.total_output_tokens, 17);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(s.output_throughput, 8.5);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 38.5);
  // Good: request 1 (ttft 100, tpot 100) and request 3 (ttft 200, single token); request 2 has
  // ttft 300 > 250.
  ASSERT_TRUE(s.goodput);
  EXPECT_DOUBLE_EQ(*s.goodput, 1.0);
  EXPECT_NEAR(s.ttft_ms.mean, 200, 1e-9);
  EXPECT_NEAR(s.ttft_ms.median, 200, 1e-9);
  EXPECT_NEAR(s.ttft_ms.p90, 280, 1e-9);
  EXPECT_NEAR(s.tpot_ms.mean, 100, 1e-9);
  EXPECT_NEAR(s.e2el_ms.median, 500, 1e-9);
  EXPECT_NEAR(s.e2el_ms.p99, 1284, 1e-9);  // 0.5 + 0.98 * (1.3 - 0.5)
  // ITL: 7 gaps, sorted {0.1 x5, 0.2, 0.7}; p90 at 5.4 -> 0.2 + 0.4 * 0.5.
  EXPECT_NEAR(s.itl_ms.median, 100, 1e-9);
  EXPECT_NEAR(s.itl_ms.p90, 400, 1e-9);
  EXPECT_NEAR(s.itl_ms.mean, 1400.0 / 7, 1e-9);
}

TEST(Stats, NoSloMeansNoGoodputAndTightSloMeansZero) {
  const std::vector<RequestResult> rs = {ok(0.1, 0.5, 5, 10, {})};
  EXPECT_FALSE(compute_stats(rs, 1.0, Slo{}).goodput);
  Slo tight;
  tight.e2el_ms = 400;
  EXPECT_DOUBLE_EQ(*compute_stats(rs, 1.0, tight).goodput, 0.0);
}

TEST(Stats, AllFailedGivesZeros) {
  RequestResult bad;
  bad.error = "x";
  const BenchStats s = compute_stats({bad}, 1.0, Slo{});
  EXPECT_EQ(s.completed, 0);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.ttft_ms.mean, 0);
  EXPECT_EQ(s.request_throughput, 0);
}

}  // namespace
}  // namespace llmserve::bench
