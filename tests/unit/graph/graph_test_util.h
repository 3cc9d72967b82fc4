// Helpers for the graph tests: run token sequences through a ModelRunner with contiguous blocks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/runner/model_runner.h"

namespace llmserve::testing {

// Logits of every position of `tokens` (T x vocab), computed in chunks of `chunk` tokens (0 =
// all at once), the sequence's KV in blocks first_block, first_block + 1, ...
std::vector<float> prefill_all_logits(ModelRunner& runner, std::span<const int32_t> tokens,
                                      int64_t chunk, int32_t first_block = 0);

// Greedy continuation of `prompt` for `steps` tokens (EOS not special). When last_logits is
// non-null, the prompt's last-position logits are copied there; margins (top1 - top2) per step.
std::vector<int32_t> greedy(ModelRunner& runner, std::span<const int32_t> prompt, int steps,
                            std::vector<float>* last_logits = nullptr,
                            std::vector<float>* margins = nullptr);

std::vector<float> read_f32_file(const std::string& path);
std::string read_text_file(const std::string& path);

}  // namespace llmserve::testing
