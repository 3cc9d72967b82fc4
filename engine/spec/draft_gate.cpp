#include "engine/spec/draft_gate.h"

#include <algorithm>

namespace llmserve {

int32_t DraftGate::best_drafts(double p, double cost, int32_t max_drafts) {
  if (cost <= 0) return std::max(max_drafts, 0);
  int32_t best = 0;
  double best_rate = 1.0, tokens = 1.0, pk = 1.0;
  for (int32_t d = 1; d <= max_drafts; ++d) {
    pk *= p;
    tokens += pk;
    const double rate = tokens / (1.0 + cost * d);
    if (rate > best_rate) {
      best_rate = rate;
      best = d;
    }
  }
  return best;
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
  int32_t best = 0;
  double tokens = 1.0, pk = 1.0;
  double best_rate = 1.0 / std::max(check_cost(check_costs, 0), 1e-9);
  for (int32_t d = 1; d <= max_drafts; ++d) {
    pk *= p;
    tokens += pk;
    const double rate = tokens / std::max(check_cost(check_costs, d), 1e-9);
    if (rate > best_rate) {
      best_rate = rate;
      best = d;
    }
  }
  return best;
}

int32_t DraftGate::num_drafts(int32_t max_drafts) {
  if (max_drafts <= 0) return 0;
  const int32_t d = check_costs_ ? best_drafts(p_, *check_costs_, max_drafts)
                                 : best_drafts(p_, cost_, max_drafts);
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
  for (int32_t i = 0; i < accepted; ++i) p_ += kWeight * (1.0 - p_);
  if (accepted < drafted) p_ -= kWeight * p_;  // the first rejected draft; later ones are unseen
}

}  // namespace llmserve
