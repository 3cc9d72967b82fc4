#include "bench/serve/stats.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <string_view>

namespace llmserve::bench {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

Distribution summarize_ms(const std::vector<double>& seconds) {
  std::vector<double> ms(seconds.size());
  std::transform(seconds.begin(), seconds.end(), ms.begin(), [](double s) { return s * 1000; });
  Distribution d;
  if (ms.empty()) return d;
  d.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  d.median = percentile(ms, 50);
  d.p90 = percentile(ms, 90);
  d.p99 = percentile(ms, 99);
  return d;
}

Result<Slo> parse_slo(const std::string& spec) {
  Slo slo;
  std::string_view rest(spec);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      return invalid_argument("goodput SLO \"" + std::string(item) + "\" is not NAME:MS");
    }
    const std::string_view name = item.substr(0, colon);
    const std::string value(item.substr(colon + 1));
    double ms = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (ec != std::errc() || p != value.data() + value.size() || !(ms > 0)) {
      return invalid_argument("goodput SLO \"" + std::string(item) + "\": bad milliseconds");
    }
    if (name == "ttft") {
      slo.ttft_ms = ms;
    } else if (name == "tpot") {
      slo.tpot_ms = ms;
    } else if (name == "e2el") {
      slo.e2el_ms = ms;
    } else {
      return invalid_argument("goodput SLO \"" + std::string(name) +
                              "\" is not one of ttft, tpot, e2el");
    }
  }
  return slo;
}

std::optional<double> tpot_s(const RequestResult& r) {
  if (r.output_tokens < 2) return std::nullopt;
  return (r.latency_s - r.ttft_s) / (r.output_tokens - 1);
}

bool meets_slo(const RequestResult& r, const Slo& slo) {
  if (!r.success) return false;
  if (slo.ttft_ms && r.ttft_s * 1000 > *slo.ttft_ms) return false;
  if (slo.e2el_ms && r.latency_s * 1000 > *slo.e2el_ms) return false;
  if (slo.tpot_ms) {
    const double tpot = tpot_s(r).value_or(0);
    if (tpot * 1000 > *slo.tpot_ms) return false;
  }
  return true;
}

BenchStats compute_stats(const std::vector<RequestResult>& results, double duration_s,
                         const Slo& slo) {
  BenchStats s;
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2el;
  int good = 0;
  for (const auto& r : results) {
    if (!r.success) {
      ++s.failed;
      if (s.errors.size() < 5 &&
          std::find(s.errors.begin(), s.errors.end(), r.error) == s.errors.end()) {
        s.errors.push_back(r.error);
      }
      continue;
    }
    ++s.completed;
    s.total_input_tokens += r.prompt_tokens;
    s.total_output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_s);
    e2el.push_back(r.latency_s);
    if (auto t = tpot_s(r)) tpot.push_back(*t);
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    if (meets_slo(r, slo)) ++good;
  }
  if (duration_s > 0) {
    s.request_throughput = s.completed / duration_s;
    s.output_throughput = static_cast<double>(s.total_output_tokens) / duration_s;
    s.total_token_throughput =
        static_cast<double>(s.total_input_tokens + s.total_output_tokens) / duration_s;
    if (slo.any()) s.goodput = good / duration_s;
  } else if (slo.any()) {
    s.goodput = 0;
  }
  s.ttft_ms = summarize_ms(ttft);
  s.tpot_ms = summarize_ms(tpot);
  s.itl_ms = summarize_ms(itl);
  s.e2el_ms = summarize_ms(e2el);
  return s;
}

}  // namespace llmserve::bench
