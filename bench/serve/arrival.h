// Request arrival schedules.
#pragma once

#include <cstdint>
#include <vector>

namespace llmserve::bench {

// Send offsets in seconds for n requests arriving as a Poisson process at `rate` requests/s:
// the first at 0, then exponential gaps with mean 1/rate (seeded, deterministic). A rate that is
// infinite or <= 0 means all at once (every offset 0).
std::vector<double> poisson_arrival_offsets(int n, double rate, uint64_t seed);

}  // namespace llmserve::bench
