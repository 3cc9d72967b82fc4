// The daemon's speculative-decoding counters (GET /metrics), read before and after a benchmark
// run so its report can give the run's draft acceptance rate and mean accepted length.
#pragma once

#include <optional>
#include <string>

#include "bench/serve/http_driver.h"

namespace llmserve::bench {

struct SpecCounters {
  double drafts = 0;           // llmserve_spec_decode_num_drafts_total (checks)
  double draft_tokens = 0;     // llmserve_spec_decode_num_draft_tokens_total
  double accepted_tokens = 0;  // llmserve_spec_decode_num_accepted_tokens_total
};

// Parses the three counters from Prometheus text; nullopt when they are absent.
std::optional<SpecCounters> parse_spec_counters(const std::string& metrics_text);
// Scrapes scheme_host_port + "/metrics" (with the API key); nullopt on any failure.
std::optional<SpecCounters> scrape_spec_counters(const HttpTarget& target);

struct SpecSummary {
  double draft_tokens = 0, accepted_tokens = 0;
  double acceptance_rate = 0;       // accepted / drafted
  double mean_accepted_length = 0;  // accepted per check
};
// after - before; nullopt when nothing was drafted.
std::optional<SpecSummary> summarize_spec(const SpecCounters& before, const SpecCounters& after);

}  // namespace llmserve::bench
