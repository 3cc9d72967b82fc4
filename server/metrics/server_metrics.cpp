#include "server/metrics/server_metrics.h"

#include <unistd.h>

#include <chrono>
#include <fstream>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "server/common/server_state.h"
#include "server/metrics/engine_collector.h"

namespace llmserve {

struct ServerMetrics::Families {
  prometheus::Registry registry;
  prometheus::Family<prometheus::Counter>& http =
      prometheus::BuildCounter()
          .Name("llmserve_http_requests_total")
          .Help("HTTP requests by route and status code.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& grpc =
      prometheus::BuildCounter()
          .Name("llmserve_grpc_requests_total")
          .Help("gRPC requests by method and status code.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& rejected =
      prometheus::BuildCounter()
          .Name("llmserve_requests_rejected_total")
          .Help("Requests turned away before reaching the engine, by reason.")
          .Register(registry);
  prometheus::Gauge& resident_memory = prometheus::BuildGauge()
                                           .Name("process_resident_memory_bytes")
                                           .Help("Resident memory size in bytes.")
                                           .Register(registry)
                                           .Add({});
  prometheus::Gauge& start_time =
      prometheus::BuildGauge()
          .Name("process_start_time_seconds")
          .Help("Start time of the process since unix epoch in seconds.")
          .Register(registry)
          .Add({});
};

ServerMetrics::ServerMetrics()
    : f_(std::make_unique<Families>()),
      start_time_seconds_(
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count()) {
  f_->start_time.Set(start_time_seconds_);
  for (RejectReason r : kRejectReasons) f_->rejected.Add({{"reason", reject_reason_name(r)}});
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::declare_http(const std::string& route, int code) {
  f_->http.Add({{"route", route}, {"code", std::to_string(code)}});
}

void ServerMetrics::declare_grpc(const std::string& method, const std::string& code) {
  f_->grpc.Add({{"method", method}, {"code", code}});
}

void ServerMetrics::count_http(const std::string& route, int code) {
  f_->http.Add({{"route", route}, {"code", std::to_string(code)}}).Increment();
}

void ServerMetrics::count_grpc(const std::string& method, const std::string& code) {
  f_->grpc.Add({{"method", method}, {"code", code}}).Increment();
}

void ServerMetrics::count_rejection(const std::string& reason) {
  f_->rejected.Add({{"reason", reason}}).Increment();
}

uint64_t process_resident_memory_bytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

void ServerMetrics::enable_vllm_names(VllmMetricsInfo info) {
  vllm_ = std::move(info);
}

std::string ServerMetrics::render(const EngineStats& stats, const EngineMetrics* metrics) const {
  f_->resident_memory.Set(static_cast<double>(process_resident_memory_bytes()));
  std::vector<prometheus::MetricFamily> families = collect_engine_metrics(stats, metrics);
  if (vllm_) {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (prometheus::MetricFamily& family : collect_vllm_metrics(stats, metrics, *vllm_, now)) {
      families.push_back(std::move(family));
    }
  }
  for (prometheus::MetricFamily& family : f_->registry.Collect()) {
    families.push_back(std::move(family));
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace llmserve
