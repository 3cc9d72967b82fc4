// Front-end counters (HTTP / gRPC requests by route and code, rejections by reason) and the
// whole /metrics page: these plus the engine's stats and histograms and process figures.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine_stats.h"

namespace llmserve {

class ServerMetrics {
 public:
  ServerMetrics();

  void count_http(const std::string& route, int code);
  void count_grpc(const std::string& method, const std::string& code);
  void count_rejection(const std::string& reason);

  // The Prometheus text page. `metrics` may be null (no engine yet).
  std::string render(const EngineStats& stats, const EngineMetrics* metrics) const;
  double start_time_seconds() const { return start_time_seconds_; }

 private:
  using Key = std::pair<std::string, std::string>;
  mutable std::mutex mu_;
  std::map<Key, uint64_t> http_;
  std::map<Key, uint64_t> grpc_;
  std::map<std::string, uint64_t> rejected_;
  double start_time_seconds_;
};

// Resident set size in bytes from /proc/self/statm; 0 when unreadable.
uint64_t process_resident_memory_bytes();

}  // namespace llmserve
