#include "engine/spec/draft_gate.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace llmserve {
namespace {

TEST(DraftGate, BestDraftsFollowsTheCostModel) {
  // Always-accepted drafts pay up to the limit; never-accepted ones never do.
  EXPECT_EQ(DraftGate::best_drafts(1.0, 0.1, 4), 4);
  EXPECT_EQ(DraftGate::best_drafts(0.0, 0.1, 4), 0);
  // p = 0.05 < cost 0.1: even one draft loses (1.05 tokens for 1.1 steps).
  EXPECT_EQ(DraftGate::best_drafts(0.05, 0.1, 4), 0);
  // p = 0.5, cost 0.1: d=1 gives 1.5/1.1 = 1.364, d=2 1.75/1.2 = 1.458, d=3 1.875/1.3 = 1.442.
  EXPECT_EQ(DraftGate::best_drafts(0.5, 0.1, 4), 2);
  EXPECT_EQ(DraftGate::best_drafts(0.5, 0.1, 1), 1);
  EXPECT_EQ(DraftGate::best_drafts(0.3, 0.0, 4), 4);  // cost 0: always the most
  EXPECT_EQ(DraftGate::best_drafts(0.9, 0.1, 0), 0);
}

TEST(DraftGate, BestDraftsFollowsAMeasuredCostTable) {
  // A linear table picks what the per-draft cost picks.
  const std::vector<double> linear{1.0, 1.1, 1.2, 1.3, 1.4};
  for (const double p : {0.0, 0.05, 0.3, 0.5, 0.7, 0.9, 1.0}) {
    EXPECT_EQ(DraftGate::best_drafts(p, linear, 4), DraftGate::best_drafts(p, 0.1, 4)) << p;
  }
  // A step in the cost (a second weight pass at 4 drafts): p = 0.8 stops at 3 drafts.
  // d=3: 2.952/1.45 = 2.036; d=4: 3.362/2.0 = 1.681.
  const std::vector<double> stepped{1.0, 1.15, 1.3, 1.45, 2.0};
  EXPECT_EQ(DraftGate::best_drafts(0.8, stepped, 4), 3);
  EXPECT_EQ(DraftGate::best_drafts(0.8, stepped, 2), 2);
  EXPECT_EQ(DraftGate::best_drafts(0.05, stepped, 4), 0);
  // Beyond the table the last increment repeats.
  EXPECT_DOUBLE_EQ(DraftGate::check_cost(stepped, 6), 2.0 + 2 * 0.55);
  EXPECT_DOUBLE_EQ(DraftGate::check_cost({}, 3), 1.0);
  // The gate built on a shared table drafts by it.
  DraftGate g(std::make_shared<const std::vector<double>>(stepped));
  for (int i = 0; i < 10; ++i) g.observe(4, 4);  // p near 1: 4 / 1.45 > 5 / 2.0
  EXPECT_EQ(g.num_drafts(4), 3);
}

TEST(DraftGate, StopsDraftingWhenRejectedAndProbesAgain) {
  DraftGate g(0.1);
  EXPECT_GT(g.num_drafts(4), 0);  // starts optimistic
  for (int i = 0; i < 30; ++i) g.observe(4, 0);
  EXPECT_LT(g.acceptance(), 0.05);
  int probes = 0;
  for (int step = 0; step < 4 * DraftGate::kProbeInterval; ++step) {
    const int32_t d = g.num_drafts(4);
    EXPECT_LE(d, 1);
    probes += d;
  }
  EXPECT_EQ(probes, 4);  // one single-draft probe per interval
  // A run of accepted probes brings full drafting back.
  for (int i = 0; i < 20; ++i) g.observe(1, 1);
  EXPECT_EQ(g.num_drafts(4), 4);
}

TEST(DraftGate, ObserveCountsOnlyTheFirstRejection) {
  DraftGate g(0.1);
  const double p0 = g.acceptance();
  g.observe(4, 4);  // four successes, no failure
  EXPECT_GT(g.acceptance(), p0);
  DraftGate h(0.1);
  h.observe(4, 2);  // two successes, then one failure (drafts 4 unseen)
  DraftGate k(0.1);
  k.observe(3, 2);
  EXPECT_DOUBLE_EQ(h.acceptance(), k.acceptance());
}

TEST(DraftGate, WeighsTheLengthOfTheMatchedContext) {
  const auto stepped =
      std::make_shared<const std::vector<double>>(std::vector<double>{1.0, 1.15, 1.3, 1.45, 2.0});
  DraftGate g(stepped);
  // L = 1: chances 1/3, 1/2, 3/5, 2/3 for drafts 1-4; d=1 1.333/1.15 = 1.159 beats d=2
  // 1.5/1.3 = 1.154 and d=3 1.6/1.45 = 1.103.
  EXPECT_DOUBLE_EQ(g.match_acceptance(1), 1.0 / 3.0);
  EXPECT_EQ(g.num_drafts_for_match(4, 1), 1);
  // L = 16: 16/18, 17/19, 18/20, 19/21; d=3 3.401/1.45 = 2.35 beats d=4 4.05/2.0 = 2.02.
  EXPECT_EQ(g.num_drafts_for_match(4, 16), 3);
  EXPECT_EQ(g.num_drafts_for_match(2, 16), 2);
  EXPECT_EQ(g.num_drafts_for_match(0, 16), 0);
  // A longer match never drafts fewer.
  int32_t prev = 0;
  for (int32_t len = 1; len <= 64; ++len) {
    const int32_t d = DraftGate(stepped).num_drafts_for_match(4, len);
    EXPECT_GE(d, prev) << len;
    prev = d;
  }
}

TEST(DraftGate, LearnsFromTheSequenceOnTopOfTheMatchLength) {
  const auto table =
      std::make_shared<const std::vector<double>>(std::vector<double>{1.0, 1.15, 1.3, 1.45, 2.0});
  // Rejected again and again: short matches stop drafting (but for the probe), long ones go on.
  DraftGate rejected(table);
  for (int i = 0; i < 60; ++i) {
    ASSERT_GE(rejected.num_drafts_for_match(4, 4), 0);
    rejected.observe(1, 0);
  }
  EXPECT_LT(rejected.match_acceptance(1), 0.1);
  int probes = 0;
  for (int step = 0; step < 2 * DraftGate::kProbeInterval; ++step)
    probes += rejected.num_drafts_for_match(4, 1);
  EXPECT_EQ(probes, 2);  // one single-draft probe per interval
  EXPECT_GE(rejected.num_drafts_for_match(4, 64), 1);
  // Accepted every time: even a one-token match is worth the full check.
  DraftGate accepted(table);
  for (int i = 0; i < 60; ++i) {
    const int32_t d = accepted.num_drafts_for_match(4, 1);
    accepted.observe(d, d);
  }
  EXPECT_GT(accepted.match_acceptance(1), 0.9);
  EXPECT_GE(accepted.num_drafts_for_match(4, 1), 3);
}

}  // namespace
}  // namespace llmserve
