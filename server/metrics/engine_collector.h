// The engine's counters, gauges and histograms as Prometheus metric families (prometheus-cpp),
// built on each scrape from one EngineStats snapshot and the engine's histograms. The engine
// itself knows nothing of Prometheus: it counts, and this collector reads the counts.
#pragma once

#include <vector>

#include <prometheus/metric_family.h>

#include "engine/engine_stats.h"

namespace llmserve {

// Every engine family, in a fixed order. `metrics` may be null (no engine yet): then the
// histogram families are left out.
std::vector<prometheus::MetricFamily> collect_engine_metrics(const EngineStats& stats,
                                                             const EngineMetrics* metrics);

// One histogram family: cumulative buckets from the engine's per-bucket counts, "+Inf" last.
prometheus::MetricFamily histogram_family(const char* name, const char* help,
                                          const HistogramSnapshot& h);

}  // namespace llmserve
