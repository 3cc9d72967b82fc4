#include "engine/core/histogram.h"

#include <algorithm>

namespace llmserve {

Histogram::Histogram(std::vector<double> upper_bounds) {
  std::sort(upper_bounds.begin(), upper_bounds.end());
  data_.bucket_counts.assign(upper_bounds.size() + 1, 0);
  data_.upper_bounds = std::move(upper_bounds);
}

void Histogram::observe(double value) {
  const auto it = std::lower_bound(data_.upper_bounds.begin(), data_.upper_bounds.end(), value);
  const size_t bucket = static_cast<size_t>(it - data_.upper_bounds.begin());
  std::lock_guard lock(mu_);
  data_.bucket_counts[bucket]++;
  data_.sum += value;
  data_.count++;
}

HistogramSnapshot Histogram::snapshot() const {
  std::lock_guard lock(mu_);
  return data_;
}

std::vector<double> Histogram::latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
          0.75,  1.0,    2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 60.0};
}

std::vector<double> Histogram::token_count_buckets() {
  return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
}

}  // namespace llmserve
