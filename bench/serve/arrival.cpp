#include "bench/serve/arrival.h"

#include <cmath>
#include <random>

namespace llmserve::bench {

std::vector<double> poisson_arrival_offsets(int n, double rate, uint64_t seed) {
  std::vector<double> out(static_cast<size_t>(std::max(n, 0)), 0.0);
  if (!(rate > 0) || std::isinf(rate)) return out;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  for (size_t i = 1; i < out.size(); ++i) out[i] = out[i - 1] + gap(rng);
  return out;
}

}  // namespace llmserve::bench
