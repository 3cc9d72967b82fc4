// How many drafts one sequence should verify next step. Verifying d drafts costs about
// 1 + cost * d decode steps and yields 1 + p + p^2 + ... + p^d tokens, where p is the chance a
// draft is accepted given the one before it was: the gate keeps p as a running estimate over the
// sequence's recent drafts and picks the d that maximises tokens per cost (0 when drafting does
// not pay). While it picks 0 it still probes with one draft every probe_interval steps, so a
// sequence that turns repetitive (copying its input) starts drafting again.
#pragma once

#include <cstdint>

namespace llmserve {

class DraftGate {
 public:
  static constexpr double kInitialAcceptance = 0.6;
  static constexpr double kWeight = 0.15;  // of each draft's outcome in the running estimate
  static constexpr int32_t kProbeInterval = 16;

  // cost: the verification cost of one draft relative to a decode step (>= 0).
  explicit DraftGate(double cost = 0.1) : cost_(cost) {}

  // Drafts to ask for, at most max_drafts (counts a step for probing when it returns 0 or 1).
  int32_t num_drafts(int32_t max_drafts);
  // The outcome of a check: `drafted` drafts verified, the first `accepted` of them accepted.
  void observe(int32_t drafted, int32_t accepted);

  double acceptance() const { return p_; }
  // The d in [0, max_drafts] maximising (1 + p + ... + p^d) / (1 + cost * d); max_drafts when
  // cost <= 0.
  static int32_t best_drafts(double p, double cost, int32_t max_drafts);

 private:
  double cost_;
  double p_ = kInitialAcceptance;
  int32_t idle_steps_ = 0;
};

}  // namespace llmserve
