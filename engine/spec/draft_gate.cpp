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

int32_t DraftGate::num_drafts(int32_t max_drafts) {
  if (max_drafts <= 0) return 0;
  const int32_t d = best_drafts(p_, cost_, max_drafts);
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
