// The POD inputs and outputs of the device sampler (sampling.h), one SamplingRow per logits row
// plus flat sparse arrays that the rows index by offset and count. Plain C++ without CUDA
// headers, so host code fills them (engine/runner/sampling_pack.h) and the kernel reads the
// same bytes. Token ids are in [0, vocab); edits apply in the CPU's order (logits_processor.h):
// logit_bias, masking, repetition penalty, presence / frequency penalties.
#pragma once

#include <cstdint>

namespace llmserve::kernels::cuda {

inline constexpr int32_t kMaxTopLogprobs = 1024;  // the largest top-N one row may ask for

struct SamplingRow {
  float inv_temperature = 1.0f;     // 1 / T, f32 as the CPU computes it (unused when greedy)
  float top_p = 1.0f;               // (0, 1]; >= 1 = off
  float min_p = 0.0f;               // [0, 1]; keeps weight >= min_p
  float repetition_penalty = 1.0f;  // 1 = off
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t greedy = 0;         // 1: argmax of the processed logits, ties to the lowest id
  int32_t top_k = 0;          // <= 0 or >= the finite count = off
  int32_t num_logprobs = -1;  // -1 = none; N >= 0: the chosen token's logprob + top N
  int32_t bias_offset = 0, bias_count = 0;        // into the LogitBias array
  int32_t mask_offset = 0, mask_count = 0;        // into the masked ids (set to -inf)
  int32_t penalty_offset = 0, penalty_count = 0;  // into the PenaltyToken array (distinct ids)
  // Structured outputs: the row's allowed-token bitmask in the grammar masks (row index, words
  // of (vocab + 31) / 32, bit id % 32 of word id / 32 set = allowed), -1 = no grammar. Applied
  // first; when the edits then leave nothing, the grammar wins (the best allowed raw logit).
  int32_t grammar_mask = -1;
  uint64_t rng_key = 0;      // RequestRng::key()
  uint64_t rng_counter = 0;  // the draw index (the sample's num_generated)
};
static_assert(sizeof(SamplingRow) == 80, "SamplingRow layout is shared with the device");

struct LogitBias {
  int32_t id;
  float value;  // added to the logit
};

// A token the penalties read: in the prompt (repetition penalty only) and/or generated
// output_count > 0 times so far. Ids within one row are distinct.
struct PenaltyToken {
  int32_t id;
  int32_t output_count;
  int32_t in_prompt;  // 0 or 1
};

struct SampledToken {
  int32_t token_id;
  float logprob;    // raw log-softmax of token_id (when num_logprobs >= 0)
  int32_t num_top;  // entries written to the row's top arrays (<= max(num_logprobs, 0))
  int32_t reserved;
};

}  // namespace llmserve::kernels::cuda
