// The requests a benchmark sends: synthetic prompts of random token ids (fixed or random lengths,
// optionally behind a shared prefix) or prompts read from a JSONL file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace llmserve::bench {

struct BenchRequest {
  std::vector<int32_t> prompt_token_ids;  // sent as a token-id list when non-empty
  std::string prompt_text;                // sent as text otherwise
  int prompt_len = 0;                     // tokens; 0 when unknown (text prompts)
  int max_tokens = 0;
  bool ignore_eos = true;
};

struct SyntheticWorkload {
  int num_requests = 0;
  int input_len = 0;              // tokens after the shared prefix
  int output_len = 0;             // tokens (max_tokens with ignore_eos)
  double random_range_ratio = 0;  // lengths uniform in [len*(1-r), len*(1+r)], r in [0, 1)
  int shared_prefix_len = 0;      // every prompt starts with the same this-many tokens
  int32_t token_id_min = 1000;    // random ids are uniform in [min, max)
  int32_t token_id_max = 10000;
  uint64_t seed = 0;
};

// Deterministic for a given seed. Errors on non-positive counts/lengths or a bad ratio/id range.
Result<std::vector<BenchRequest>> make_synthetic_workload(const SyntheticWorkload& w);

// One JSON object per line: {"prompt": string | [token ids], "max_tokens": int (optional,
// default_max_tokens otherwise), "ignore_eos": bool (optional, default false)}. Blank lines are
// skipped. Returns num_requests requests, cycling through the file when it is shorter.
Result<std::vector<BenchRequest>> load_jsonl_workload(const std::string& path, int num_requests,
                                                      int default_max_tokens);

}  // namespace llmserve::bench
