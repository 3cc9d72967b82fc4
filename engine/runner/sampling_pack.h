// Host side of the device sampler: turns (params, state) rows into the POD rows and flat sparse
// arrays of kernels/cuda/sampling_rows.h, carrying exactly the logit edits that
// apply_logits_processors (logits_processor.h) would make at this step and the RNG draw that
// Sampler::sample would take. Plain C++ (no CUDA), so it is built and tested everywhere.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/runner/sampler.h"
#include "llmserve/kernels/cuda/sampling_rows.h"

namespace llmserve {

struct SamplingPackLimits {
  int32_t max_rows = 0;
  int32_t max_sparse_entries = 0;  // per array (biases, masked ids, penalty tokens), all rows
  int32_t max_top_logprobs = 20;   // largest params.logprobs, <= kernels::cuda::kMaxTopLogprobs

  Status validate() const;
};

struct SamplingPack {
  std::vector<kernels::cuda::SamplingRow> rows;
  std::vector<kernels::cuda::LogitBias> biases;
  std::vector<int32_t> masked;
  std::vector<kernels::cuda::PenaltyToken> penalties;  // per row sorted by id
  // Rows with a grammar: their allowed-token bitmasks, token_bitmask_words(vocab) words each,
  // filled from the row state's matcher, narrowed to the token a reasoning budget forces
  // (SamplingState::fill_next_token_mask; rows[i].grammar_mask indexes them).
  std::vector<uint32_t> grammar_masks;
  int32_t num_grammar_rows = 0;
  int32_t max_num_top = 0;  // largest top-N over the rows (0 when none asks for one)

  void clear();
};

// Fills `out` (cleared first) from rows[i].params and rows[i].state; rows[i].logits is unused
// and the states are not changed. Ids outside [0, vocab_size) are dropped, as the CPU ignores
// them. Errors: vocab_size < 1 or a null params or state (invalid argument); more than
// limits.max_rows rows, a sparse array over limits.max_sparse_entries, or logprobs over
// limits.max_top_logprobs (resource exhausted: the caller samples that step on the host).
Status pack_sampling_rows(std::span<const SampleRow> rows, std::span<const int32_t> eos_ids,
                          int32_t vocab_size, const SamplingPackLimits& limits, SamplingPack& out);

}  // namespace llmserve
