#include "bench/serve/spec_metrics.h"

#include <httplib.h>

#include <sstream>

namespace llmserve::bench {
namespace {

bool read_counter(const std::string& line, const std::string& name, double& out) {
  if (line.compare(0, name.size(), name) != 0 || line.size() <= name.size() ||
      line[name.size()] != ' ') {
    return false;
  }
  try {
    out = std::stod(line.substr(name.size() + 1));
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

}  // namespace

std::optional<SpecCounters> parse_spec_counters(const std::string& text) {
  SpecCounters c;
  int found = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    found += read_counter(line, "llmserve_spec_decode_num_drafts_total", c.drafts);
    found += read_counter(line, "llmserve_spec_decode_num_draft_tokens_total", c.draft_tokens);
    found +=
        read_counter(line, "llmserve_spec_decode_num_accepted_tokens_total", c.accepted_tokens);
  }
  if (found < 3) return std::nullopt;
  return c;
}

std::optional<SpecCounters> scrape_spec_counters(const HttpTarget& target) {
  httplib::Client cli(target.scheme_host_port);
  cli.set_connection_timeout(5);
  cli.set_read_timeout(10);
  httplib::Headers headers;
  if (!target.api_key.empty()) headers.emplace("Authorization", "Bearer " + target.api_key);
  auto res = cli.Get("/metrics", headers);
  if (!res || res->status != 200) return std::nullopt;
  return parse_spec_counters(res->body);
}

std::optional<SpecSummary> summarize_spec(const SpecCounters& before, const SpecCounters& after) {
  SpecSummary s;
  s.draft_tokens = after.draft_tokens - before.draft_tokens;
  s.accepted_tokens = after.accepted_tokens - before.accepted_tokens;
  const double checks = after.drafts - before.drafts;
  if (s.draft_tokens <= 0 || checks <= 0) return std::nullopt;
  s.acceptance_rate = s.accepted_tokens / s.draft_tokens;
  s.mean_accepted_length = s.accepted_tokens / checks;
  return s;
}

}  // namespace llmserve::bench
