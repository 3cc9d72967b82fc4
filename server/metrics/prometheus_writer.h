// Prometheus text exposition format 0.0.4: "# HELP", "# TYPE", samples with escaped labels,
// histograms as cumulative _bucket{le=...} plus _sum and _count.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/histogram.h"

namespace llmserve {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

std::string escape_label_value(std::string_view v);  // backslash, double quote, newline
std::string escape_help(std::string_view v);         // backslash, newline
std::string format_metric_value(double v);           // "+Inf", "-Inf", "NaN", shortest round-trip

class PrometheusWriter {
 public:
  // One family header; call once per metric name before its samples.
  void header(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const MetricLabels& labels, double value);

  void gauge(std::string_view name, std::string_view help, double value);
  void counter(std::string_view name, std::string_view help, double value);
  // Header plus samples; several label sets may share one family via histogram_samples.
  void histogram(std::string_view name, std::string_view help, const HistogramSnapshot& h);
  void histogram_samples(std::string_view name, const MetricLabels& labels,
                         const HistogramSnapshot& h);

  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

}  // namespace llmserve
