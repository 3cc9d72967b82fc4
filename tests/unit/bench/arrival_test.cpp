#include "bench/serve/arrival.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace llmserve::bench {
namespace {

TEST(Arrival, PoissonGapsHaveTheRightMeanAndSpread) {
  const double rate = 8.0;
  const int n = 20001;
  const auto t = poisson_arrival_offsets(n, rate, 42);
  ASSERT_EQ(t.size(), static_cast<size_t>(n));
  EXPECT_EQ(t[0], 0.0);
  double sum = 0, sum_sq = 0;
  for (int i = 1; i < n; ++i) {
    const double gap = t[i] - t[i - 1];
    ASSERT_GE(gap, 0.0);
    sum += gap;
    sum_sq += gap * gap;
  }
  const double mean = sum / (n - 1);
  const double var = sum_sq / (n - 1) - mean * mean;
  // Exponential gaps: mean 1/rate, standard deviation 1/rate. 20000 samples -> ~0.7% error.
  EXPECT_NEAR(mean, 1.0 / rate, 0.03 / rate);
  EXPECT_NEAR(std::sqrt(var), 1.0 / rate, 0.05 / rate);
}

TEST(Arrival, SeededAndDeterministic) {
  EXPECT_EQ(poisson_arrival_offsets(50, 3.0, 7), poisson_arrival_offsets(50, 3.0, 7));
  EXPECT_NE(poisson_arrival_offsets(50, 3.0, 7), poisson_arrival_offsets(50, 3.0, 8));
}

TEST(Arrival, InfiniteRateMeansAllAtOnce) {
  const auto t = poisson_arrival_offsets(5, std::numeric_limits<double>::infinity(), 1);
  EXPECT_EQ(t, std::vector<double>(5, 0.0));
  EXPECT_TRUE(poisson_arrival_offsets(0, 1.0, 1).empty());
}

}  // namespace
}  // namespace llmserve::bench
