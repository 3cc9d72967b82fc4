// vLLM's metric names (vllm/v1/metrics/loggers.py) for the same engine figures as the llmserve_*
// families, so that routers and endpoint pickers written for vLLM judge llmserve workers with no
// configuration: smg and vllm-router read vllm:num_requests_running / _waiting and
// vllm:kv_cache_usage_perc; the Gateway API Inference Extension's picker also reads
// vllm:lora_requests_info and vllm:cache_config_info. Every family carries the labels
// model_name and engine="0", as vLLM's do. Turned off by metrics.vllm_names: false.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "engine/engine_stats.h"

namespace llmserve {

// Static facts of the engine shown as labels of vllm:cache_config_info.
struct VllmMetricsInfo {
  std::string model_name;
  int32_t block_size = 16;
  std::string cache_dtype = "auto";
  bool enable_prefix_caching = true;
  double gpu_memory_utilization = 0.9;
};

// The vllm:* families from one stats snapshot; `metrics` may be null (histograms left out).
// unix_time: the value of vllm:lora_requests_info (vLLM sets it to the time of the scrape).
std::vector<prometheus::MetricFamily> collect_vllm_metrics(const EngineStats& stats,
                                                           const EngineMetrics* metrics,
                                                           const VllmMetricsInfo& info,
                                                           double unix_time);

}  // namespace llmserve
