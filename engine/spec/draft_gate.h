// How many drafts one sequence should verify next step. Verifying d drafts costs check_cost(d)
// decode steps (1 + cost * d when only a per-draft cost is known; measured per d at start-up by
// default, verify_cost.h) and yields 1 + p + p^2 + ... + p^d tokens, where p is the chance a
// draft is accepted given the one before it was: the gate keeps p as a running estimate over the
// sequence's recent drafts and picks the d that maximises tokens per cost (0 when drafting does
// not pay). While it picks 0 it still probes with one draft every probe_interval steps, so a
// sequence that turns repetitive (copying its input) starts drafting again.
//
// With a proposal in hand whose matched context is known (n-gram: the suffix length L it matched,
// Proposer::proposes_before_gate), the gate weighs that instead: draft j (from 0) is accepted with
// chance L' / (L' + kMatchPrior), L' = L + j (the longer the context that matched, the likelier
// the copy goes on; each accepted draft lengthens the match by one), shifted in log-odds by the
// sequence's own record of such drafts.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace llmserve {

class DraftGate {
 public:
  static constexpr double kInitialAcceptance = 0.6;
  static constexpr double kWeight = 0.15;  // of each draft's outcome in the running estimate
  static constexpr int32_t kProbeInterval = 16;
  static constexpr double kMatchPrior = 2.0;      // L' / (L' + kMatchPrior)
  static constexpr double kMatchWeight = 0.1;     // log-odds step per observed draft
  static constexpr double kMatchBiasLimit = 3.0;  // |log-odds shift| at most

  // cost: the verification cost of one draft relative to a decode step (>= 0); a check of d
  // drafts costs 1 + cost * d steps.
  explicit DraftGate(double cost = 0.1) : cost_(cost) {}
  // check_costs[d]: a check of d drafts in decode steps ([0] = 1); d beyond the table costs its
  // last entry plus the last step's increment per further draft. Shared by every sequence.
  explicit DraftGate(std::shared_ptr<const std::vector<double>> check_costs)
      : cost_(0.0), check_costs_(std::move(check_costs)) {}

  // Drafts to ask for, at most max_drafts (counts a step for probing when it returns 0 or 1).
  int32_t num_drafts(int32_t max_drafts);
  // How many of a proposal's max_drafts drafts to verify, given the length of the context it
  // matched (>= 1); probes as num_drafts does.
  int32_t num_drafts_for_match(int32_t max_drafts, int32_t match_length);
  // The outcome of a check: `drafted` drafts verified, the first `accepted` of them accepted.
  void observe(int32_t drafted, int32_t accepted);

  double acceptance() const { return p_; }
  // The chance the gate gives a draft whose matched context is match_length tokens long.
  double match_acceptance(int32_t match_length) const;
  // The d in [0, max_drafts] maximising (1 + p + ... + p^d) / (1 + cost * d); max_drafts when
  // cost <= 0.
  static int32_t best_drafts(double p, double cost, int32_t max_drafts);
  // The same with a check of d drafts costing check_costs[d] steps (extended as above).
  static int32_t best_drafts(double p, std::span<const double> check_costs, int32_t max_drafts);
  // check_costs[d] for any d >= 0 (linear beyond the table; 1 + d * 0 for an empty table).
  static double check_cost(std::span<const double> check_costs, int32_t d);

 private:
  double cost_;
  std::shared_ptr<const std::vector<double>> check_costs_;  // null: 1 + cost_ * d
  int32_t after_idle_step(int32_t d);

  double p_ = kInitialAcceptance;
  int32_t idle_steps_ = 0;
  double match_bias_ = 0.0;  // log-odds added to the prior by this sequence's outcomes
  int32_t last_match_ = 0;   // match length of the last num_drafts_for_match (0: num_drafts)
};

}  // namespace llmserve
