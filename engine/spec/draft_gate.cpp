#include "engine/spec/draft_gate.h"

#include <algorithm>
#include <cmath>

namespace llmserve {
namespace {

// The d in [0, max_drafts] maximising expected tokens per cost: draft j (from 1) is accepted
// with chance(j) given the ones before it were; a check of d drafts costs cost(d) steps.
template <typename Chance, typename Cost>
int32_t most_tokens_per_cost(int32_t max_drafts, Chance&& chance, Cost&& cost) {
  int32_t best = 0;
  double tokens = 1.0, chain = 1.0;
  double best_rate = 1.0 / std::max(cost(0), 1e-9);
  for (int32_t d = 1; d <= max_drafts; ++d) {
    chain *= chance(d);
    tokens += chain;
    const double rate = tokens / std::max(cost(d), 1e-9);
    if (rate > best_rate) {
      best_rate = rate;
      best = d;
    }
  }
  return best;
}

}  // namespace

int32_t DraftGate::best_drafts(double p, double cost, int32_t max_drafts) {
  if (cost <= 0) return std::max(max_drafts, 0);
  return most_tokens_per_cost(
      max_drafts, [p](int32_t) { return p; }, [cost](int32_t d) { return 1.0 + cost * d; });
}

double DraftGate::check_cost(std::span<const double> check_costs, int32_t d) {
  if (check_costs.empty()) return 1.0;
  const auto n = static_cast<int32_t>(check_costs.size());
  if (d < n) return check_costs[static_cast<size_t>(std::max(d, 0))];
  const double last = check_costs[static_cast<size_t>(n - 1)];
  const double step = n >= 2 ? std::max(last - check_costs[static_cast<size_t>(n - 2)], 0.0) : 0.0;
  return last + step * (d - (n - 1));
}

int32_t DraftGate::best_drafts(double p, std::span<const double> check_costs, int32_t max_drafts) {
  return most_tokens_per_cost(
      max_drafts, [p](int32_t) { return p; },
      [check_costs](int32_t d) { return check_cost(check_costs, d); });
}

int32_t DraftGate::num_drafts(int32_t max_drafts) {
  if (max_drafts <= 0) return 0;
  last_match_ = 0;
  const int32_t d = check_costs_ ? best_drafts(p_, *check_costs_, max_drafts)
                                 : best_drafts(p_, cost_, max_drafts);
  return after_idle_step(d);
}

double DraftGate::match_acceptance(int32_t match_length) const {
  const double len = std::max(match_length, 1);
  const double odds = len / kMatchPrior * std::exp(match_bias_);
  return odds / (1.0 + odds);
}

int32_t DraftGate::num_drafts_for_match(int32_t max_drafts, int32_t match_length) {
  if (max_drafts <= 0) return 0;
  last_match_ = std::max(match_length, 1);
  const int32_t best = most_tokens_per_cost(
      max_drafts, [this](int32_t d) { return match_acceptance(last_match_ + d - 1); },
      [this](int32_t d) { return check_costs_ ? check_cost(*check_costs_, d) : 1.0 + cost_ * d; });
  return after_idle_step(best);
}

int32_t DraftGate::after_idle_step(int32_t d) {
  if (d > 0) {
    idle_steps_ = 0;
    return d;
  }
  if (++idle_steps_ < kProbeInterval) return 0;
  idle_steps_ = 0;
  return 1;
}

void DraftGate::observe(int32_t drafted, int32_t accepted) {
  accepted = std::clamp(accepted, 0, std::max(drafted, 0));
  if (last_match_ > 0) {  // a gradient step on the log-odds per draft seen
    double shift = 0.0;
    for (int32_t j = 0; j < accepted; ++j)
      shift += kMatchWeight * (1.0 - match_acceptance(last_match_ + j));
    if (accepted < drafted) shift -= kMatchWeight * match_acceptance(last_match_ + accepted);
    match_bias_ = std::clamp(match_bias_ + shift, -kMatchBiasLimit, kMatchBiasLimit);
  }
  for (int32_t i = 0; i < accepted; ++i) p_ += kWeight * (1.0 - p_);
  if (accepted < drafted) p_ -= kWeight * p_;  // the first rejected draft; later ones are unseen
}

}  // namespace llmserve
