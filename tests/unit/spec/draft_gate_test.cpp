#include "engine/spec/draft_gate.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace llmserve
