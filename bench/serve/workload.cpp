#include "bench/serve/workload.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

namespace llmserve::bench {
namespace {

struct LengthRange {
  int lo = 0;
  int hi = 0;
};

LengthRange length_range(int len, double ratio) {
  const int lo = std::max(1, static_cast<int>(std::floor(len * (1.0 - ratio))));
  const int hi = std::max(lo, static_cast<int>(std::floor(len * (1.0 + ratio))));
  return {lo, hi};
}

int draw(std::mt19937_64& rng, LengthRange r) {
  return std::uniform_int_distribution<int>(r.lo, r.hi)(rng);
}

}  // namespace

Result<std::vector<BenchRequest>> make_synthetic_workload(const SyntheticWorkload& w) {
  if (w.num_requests < 0) return invalid_argument("num_requests must be >= 0");
  if (w.input_len < 1) return invalid_argument("input_len must be >= 1");
  if (w.output_len < 1) return invalid_argument("output_len must be >= 1");
  if (w.shared_prefix_len < 0) return invalid_argument("shared_prefix_len must be >= 0");
  if (!(w.random_range_ratio >= 0 && w.random_range_ratio < 1)) {
    return invalid_argument("random_range_ratio must be in [0, 1)");
  }
  if (w.token_id_min < 0 || w.token_id_max <= w.token_id_min) {
    return invalid_argument("token id range must satisfy 0 <= min < max");
  }
  std::mt19937_64 rng(w.seed);
  std::uniform_int_distribution<int32_t> token(w.token_id_min, w.token_id_max - 1);
  std::vector<int32_t> prefix(static_cast<size_t>(w.shared_prefix_len));
  for (auto& t : prefix) t = token(rng);
  const LengthRange in = length_range(w.input_len, w.random_range_ratio);
  const LengthRange out = length_range(w.output_len, w.random_range_ratio);
  std::vector<BenchRequest> reqs(static_cast<size_t>(w.num_requests));
  for (auto& r : reqs) {
    const int n_in = draw(rng, in);
    r.max_tokens = draw(rng, out);
    r.prompt_token_ids = prefix;
    r.prompt_token_ids.reserve(prefix.size() + n_in);
    for (int i = 0; i < n_in; ++i) r.prompt_token_ids.push_back(token(rng));
    r.prompt_len = static_cast<int>(r.prompt_token_ids.size());
    r.ignore_eos = true;
  }
  return reqs;
}

Result<std::vector<BenchRequest>> load_jsonl_workload(const std::string& path, int num_requests,
                                                      int default_max_tokens) {
  if (num_requests < 0) return invalid_argument("num_requests must be >= 0");
  std::ifstream in(path);
  if (!in) return not_found("cannot open dataset " + path);
  std::vector<BenchRequest> rows;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return data_loss(where + "not a JSON object");
    BenchRequest r;
    r.ignore_eos = false;
    r.max_tokens = default_max_tokens;
    const auto p = j.find("prompt");
    if (p == j.end()) return data_loss(where + "missing \"prompt\"");
    if (p->is_string()) {
      r.prompt_text = p->get<std::string>();
    } else if (p->is_array() && !p->empty()) {
      for (const auto& t : *p) {
        if (!t.is_number_integer()) return data_loss(where + "\"prompt\" ids must be integers");
        r.prompt_token_ids.push_back(t.get<int32_t>());
      }
      r.prompt_len = static_cast<int>(r.prompt_token_ids.size());
    } else {
      return data_loss(where + "\"prompt\" must be a string or a non-empty list of token ids");
    }
    if (const auto m = j.find("max_tokens"); m != j.end()) {
      if (!m->is_number_integer() || m->get<int64_t>() < 1) {
        return data_loss(where + "\"max_tokens\" must be a positive integer");
      }
      r.max_tokens = m->get<int>();
    }
    if (const auto e = j.find("ignore_eos"); e != j.end()) {
      if (!e->is_boolean()) return data_loss(where + "\"ignore_eos\" must be a boolean");
      r.ignore_eos = e->get<bool>();
    }
    if (r.max_tokens < 1) return data_loss(where + "no \"max_tokens\" and no default");
    rows.push_back(std::move(r));
  }
  if (rows.empty()) return data_loss(path + ": no prompts");
  std::vector<BenchRequest> reqs;
  reqs.reserve(static_cast<size_t>(num_requests));
  for (int i = 0; i < num_requests; ++i) reqs.push_back(rows[static_cast<size_t>(i) % rows.size()]);
  return reqs;
}

}  // namespace llmserve::bench
