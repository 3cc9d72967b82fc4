// Per-request sampling and stop settings (DESIGN §6). Units: tokens unless noted.
// validate() checks ranges and names the offending field; the front ends call it before submit.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace llmserve {

struct SamplingParams {
  float temperature = 1.0f;             // 0 = greedy; [0, 100]
  int32_t top_k = 0;                    // 0 or -1 = off
  float top_p = 1.0f;                   // (0, 1]
  float min_p = 0.0f;                   // [0, 1]
  float repetition_penalty = 1.0f;      // (0, 10]; > 1 discourages tokens seen in prompt + output
  float presence_penalty = 0.0f;        // [-2, 2]; on tokens in the output so far
  float frequency_penalty = 0.0f;       // [-2, 2]; per occurrence in the output so far
  std::map<int32_t, float> logit_bias;  // token id -> bias added to the logit, [-100, 100]
  std::optional<uint64_t> seed;         // per-request RNG seed; unset = drawn from the server seed
  int32_t max_tokens = 16;              // >= 0 new tokens (0 = only prompt processing)
  int32_t min_tokens = 0;         // EOS / stop tokens are masked until this many are generated
  std::vector<std::string> stop;  // stop strings (up to 16), matched on the decoded text
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  int32_t logprobs = -1;         // -1 = none; N >= 0: the chosen token's logprob + top-N
  int32_t prompt_logprobs = -1;  // -1 = none; N >= 0: each prompt token's logprob + top-N
  int32_t n = 1;                 // parallel samples sharing the prompt's cached blocks

  Status validate(int32_t vocab_size, int32_t max_logprobs = 20) const;
};

}  // namespace llmserve
