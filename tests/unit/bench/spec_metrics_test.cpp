#include "bench/serve/spec_metrics.h"

#include <gtest/gtest.h>

namespace llmserve::bench {
namespace {

TEST(SpecMetrics, ParsesTheCountersAndSummarizesTheRun) {
  const std::string before =
      "# TYPE llmserve_spec_decode_num_drafts_total counter\n"
      "llmserve_spec_decode_num_drafts_total 10\n"
      "llmserve_spec_decode_num_draft_tokens_total 40\n"
      "llmserve_spec_decode_num_draft_tokens_total_extra 999\n"
      "llmserve_spec_decode_num_accepted_tokens_total 12\n"
      "llmserve_spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 7\n";
  const std::string after =
      "llmserve_spec_decode_num_drafts_total 30\n"
      "llmserve_spec_decode_num_draft_tokens_total 120\n"
      "llmserve_spec_decode_num_accepted_tokens_total 72\n";
  auto b = parse_spec_counters(before);
  auto a = parse_spec_counters(after);
  ASSERT_TRUE(b && a);
  EXPECT_EQ(b->draft_tokens, 40);
  EXPECT_EQ(b->accepted_tokens, 12);
  auto s = summarize_spec(*b, *a);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->acceptance_rate, 60.0 / 80.0);
  EXPECT_DOUBLE_EQ(s->mean_accepted_length, 60.0 / 20.0);
  EXPECT_FALSE(summarize_spec(*a, *a));  // nothing drafted during the run
  EXPECT_FALSE(parse_spec_counters("llmserve_engine_steps_total 5\n"));
}

}  // namespace
}  // namespace llmserve::bench
