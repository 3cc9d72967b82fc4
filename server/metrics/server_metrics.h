// The /metrics page: a prometheus-cpp registry of the front end's own counters (HTTP / gRPC
// requests by route or method and code, rejections by reason) and process figures, plus the
// engine's families read from its stats on each scrape (engine_collector.h), in the Prometheus
// text format 0.0.4.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/engine_stats.h"
#include "server/metrics/vllm_metrics.h"

namespace llmserve {

class ServerMetrics {
 public:
  // Every rejection reason (server_state.h) exists at 0 from here on.
  ServerMetrics();
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // Makes a series exist at 0 before its first event, so a dashboard shows 0 rather than no
  // data (the transports declare their routes / methods when they are built).
  void declare_http(const std::string& route, int code);
  void declare_grpc(const std::string& method, const std::string& code);

  // Thread-safe.
  void count_http(const std::string& route, int code);
  void count_grpc(const std::string& method, const std::string& code);
  void count_rejection(const std::string& reason);

  // Also render vLLM's names (vllm_metrics.h) for the engine described by `info`. Call before
  // the first render (not synchronized with it).
  void enable_vllm_names(VllmMetricsInfo info);

  // The Prometheus text page. `metrics` may be null (no engine yet).
  std::string render(const EngineStats& stats, const EngineMetrics* metrics) const;
  double start_time_seconds() const { return start_time_seconds_; }

 private:
  struct Families;  // the registry and its families (prometheus-cpp stays out of this header)
  std::unique_ptr<Families> f_;
  double start_time_seconds_;
  std::optional<VllmMetricsInfo> vllm_;
};

// Resident set size in bytes from /proc/self/statm; 0 when unreadable.
uint64_t process_resident_memory_bytes();

}  // namespace llmserve
