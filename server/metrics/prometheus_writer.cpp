#include "server/metrics/prometheus_writer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace llmserve {

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string escape_help(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string format_metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.0f", v);
    return buf;
  }
  char buf[32];
  for (int prec = 6; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

void PrometheusWriter::header(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += escape_help(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusWriter::sample(std::string_view name, const MetricLabels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out_ += ',';
      out_ += labels[i].first;
      out_ += "=\"";
      out_ += escape_label_value(labels[i].second);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += format_metric_value(value);
  out_ += '\n';
}

void PrometheusWriter::gauge(std::string_view name, std::string_view help, double value) {
  header(name, "gauge", help);
  sample(name, {}, value);
}

void PrometheusWriter::counter(std::string_view name, std::string_view help, double value) {
  header(name, "counter", help);
  sample(name, {}, value);
}

void PrometheusWriter::histogram(std::string_view name, std::string_view help,
                                 const HistogramSnapshot& h) {
  header(name, "histogram", help);
  histogram_samples(name, {}, h);
}

void PrometheusWriter::histogram_samples(std::string_view name, const MetricLabels& labels,
                                         const HistogramSnapshot& h) {
  const std::string bucket = std::string(name) + "_bucket";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= h.upper_bounds.size(); ++i) {
    cumulative += i < h.bucket_counts.size() ? h.bucket_counts[i] : 0;
    MetricLabels l = labels;
    l.emplace_back("le", i < h.upper_bounds.size() ? format_metric_value(h.upper_bounds[i])
                                                   : std::string("+Inf"));
    sample(bucket, l, static_cast<double>(cumulative));
  }
  sample(std::string(name) + "_sum", labels, h.sum);
  sample(std::string(name) + "_count", labels, static_cast<double>(h.count));
}

}  // namespace llmserve
