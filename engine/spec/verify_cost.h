// What a check costs on this machine and model, relative to a decode step: times a one-token
// decode and checks of 1..num_tokens drafts (decode rows over a 512-token context in the
// still-empty KV cache) at start-up. The cost is not linear in the drafts: the CPU kernels take
// at most 4 q8x2 tokens per weight pass (AVX-512 pair kernels), so a check of 4 drafts (5 rows)
// pays for two passes where one of 3 pays for one (2-core Xeon, SmolLM2-135M Q4_1: 1.22, 1.48,
// 1.71, 2.09 steps for 1..4 drafts). On a GPU a decode step is bandwidth-bound far beyond 1 + k
// rows and every entry is close to 1.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/runner/model_runner.h"

namespace llmserve {

// costs[d], d = 0..num_tokens: a check of d drafts in decode steps (costs[0] = 1, non-decreasing).
// Each round times the decode and every check back to back (the thread pool stays warm, and a
// busy neighbour slows all of them alike); each entry is the median over rounds of the check's
// time over the decode's in the same round.
// Precondition: no request holds KV blocks yet (it writes K/V into blocks 1..).
Result<std::vector<double>> measure_check_costs(ModelRunner& runner, int32_t num_tokens);

// The per-draft cost of a full check, (costs[k] - 1) / k: one number for logs and metrics.
double per_draft_cost(const std::vector<double>& costs);

}  // namespace llmserve
