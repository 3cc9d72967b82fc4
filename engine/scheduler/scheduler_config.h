// Knobs of the continuous-batching scheduler (DESIGN.md §4). Token counts are per engine step.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace llmserve {

struct SchedulerConfig {
  int32_t max_num_batched_tokens = 2048;  // token budget of one step (prefill + decode)
  int32_t max_num_seqs = 256;             // running requests at most
  int32_t max_model_len = 2048;           // prompt + output tokens of one request at most
  // Off: a prompt is prefilled in one step or waits; needs max_num_batched_tokens >= max_model_len.
  bool enable_chunked_prefill = true;
  // Prompt tokens whose logits are returned for scoring (Request::score_prompt) per step at
  // most: such prompts are prefilled in chunks of this size, chunked prefill or not.
  int32_t max_scored_tokens_per_step = 256;

  Status validate() const {
    if (max_num_batched_tokens < 1 || max_num_seqs < 1 || max_model_len < 2 ||
        max_scored_tokens_per_step < 1) {
      return invalid_argument(
          "scheduler: max_num_batched_tokens, max_num_seqs, max_scored_tokens_per_step must be "
          ">= 1 and max_model_len >= 2");
    }
    // Every running decode gets its token each step only if the budget covers them all.
    if (max_num_batched_tokens < max_num_seqs) {
      return invalid_argument("scheduler: max_num_batched_tokens (" +
                              std::to_string(max_num_batched_tokens) + ") < max_num_seqs (" +
                              std::to_string(max_num_seqs) + ")");
    }
    if (!enable_chunked_prefill && max_num_batched_tokens < max_model_len) {
      return invalid_argument(
          "scheduler: without chunked prefill max_num_batched_tokens must be "
          ">= max_model_len");
    }
    return Status::ok();
  }
};

}  // namespace llmserve
