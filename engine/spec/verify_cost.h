// The cost of verifying one draft relative to a decode step on this machine and model: times a
// one-token decode and a check of num_tokens drafts (decode rows over a 512-token context in the
// still-empty KV cache, best of a few runs) at start-up. About 0.02 on a GPU, where a decode step
// is bandwidth-bound far beyond 1 + k rows; about 0.4 on a 2-core CPU (q8x2), where it is not.
#pragma once

#include <cstdint>

#include "engine/core/status.h"
#include "engine/runner/model_runner.h"

namespace llmserve {

// Precondition: no request holds KV blocks yet (it writes K/V into blocks 1..).
Result<double> measure_draft_token_cost(ModelRunner& runner, int32_t num_tokens);

}  // namespace llmserve
