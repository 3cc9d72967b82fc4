// A fixed-bucket histogram (Prometheus semantics: upper bounds, cumulative on export).
// Thread-safe: observe() from the engine thread, snapshot() from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace llmserve {

struct HistogramSnapshot {
  std::vector<double> upper_bounds;    // ascending; +Inf implied after the last
  std::vector<uint64_t> bucket_counts;  // non-cumulative, size upper_bounds.size() + 1
  double sum = 0;
  uint64_t count = 0;
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  HistogramSnapshot snapshot() const;

  // Buckets for latencies in seconds (1 ms .. 60 s) and for token counts (1 .. 8192).
  static std::vector<double> latency_buckets();
  static std::vector<double> token_count_buckets();

 private:
  mutable std::mutex mu_;
  HistogramSnapshot data_;
};

}  // namespace llmserve
