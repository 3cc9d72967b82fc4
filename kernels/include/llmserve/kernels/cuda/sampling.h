// Sampling on the device, one CTA per logits row, as the CPU Sampler does it (sampler.h): the
// row's sparse edits (sampling_rows.h), then greedy argmax or temperature / top_k / top_p /
// min_p and the counter-based draw over the kept ids in ascending id order; and the raw
// log-softmax logprobs of the chosen token and the top N. Kernels know rows, not requests.
// All pointers are device memory; the launchers enqueue on `stream` (graph-capturable: no
// allocation, no host sync) and return the launch error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "llmserve/kernels/cuda/sampling_rows.h"

namespace llmserve::kernels::cuda {

inline constexpr int32_t kMaxSamplingVocab = 1 << 24;

struct SamplingLaunch {
  const float* logits = nullptr;            // [num_rows, vocab_size] raw model logits (read only)
  float* work = nullptr;                    // [num_rows, vocab_size] out: the processed logits
  const SamplingRow* rows = nullptr;        // [num_rows]
  const LogitBias* biases = nullptr;        // indexed by rows[r].bias_offset / bias_count
  const int32_t* masked = nullptr;          // indexed by rows[r].mask_offset / mask_count
  const PenaltyToken* penalties = nullptr;  // indexed by rows[r].penalty_offset / count
  const uint32_t* grammar_masks = nullptr;  // [rows with a grammar, mask_words], by grammar_mask
  SampledToken* out = nullptr;              // [num_rows]
  int32_t* top_ids = nullptr;               // [num_rows, top_stride]: top-N ids, logit desc, id asc
  float* top_logprobs = nullptr;            // [num_rows, top_stride]: their raw logprobs
  int32_t num_rows = 0;
  int32_t vocab_size = 0;  // in [1, kMaxSamplingVocab]
  int32_t top_stride = 0;  // in [0, kMaxTopLogprobs]; rows' top N is cut to it
  int32_t mask_words = 0;  // (vocab_size + 31) / 32 when any row has a grammar mask
};

// Samples every row. Preconditions: sparse ids in [0, vocab_size) (others are skipped), the
// penalty ids of one row distinct. cudaErrorInvalidValue for sizes out of range.
cudaError_t sample_rows(const SamplingLaunch& p, cudaStream_t stream);

// out[i] = RequestRng's next_uniform() with key keys[i] at counter counters[i] (a test hook for
// the device RNG; sample_rows draws the same numbers).
cudaError_t sampling_uniforms(const uint64_t* keys, const uint64_t* counters, int32_t n,
                              double* out, cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
