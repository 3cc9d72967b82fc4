// Bidirectional attention for pooling rows (ModelConfig::bidirectional, EmbeddingGemma): every
// row of a pooling request attends all of its request's prompt, not just the rows before it.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/forward_batch.h"

namespace llmserve {

// attend_end [T] for ForwardBatch::attend_end: seq_lens[b] for each pool row of request b, the
// causal position + 1 for every other row. Precondition: batch validated, attend_end empty.
// Errors: a pooling request that does not run its whole prompt in this step (a bidirectional
// row needs every later row of its prompt), or one whose rows are not all pool rows.
Status bidirectional_attend_end(const ForwardBatch& batch, std::vector<int32_t>& attend_end);

}  // namespace llmserve
