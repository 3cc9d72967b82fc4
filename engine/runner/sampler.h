// Turns one logits row per sample into a token (DESIGN §6). Per row, in order: logit_bias,
// min_tokens masking, repetition / presence / frequency penalties (logits_processor.h), then
// temperature (< 1e-5 = greedy argmax, ties to the lowest id), top_k, top_p (on the top-k
// renormalised distribution), min_p, and an inverse-CDF draw with the sample's own RNG (one
// draw per token, greedy included). Ranking (top_k, top_p) is by logit descending, then id
// ascending. The draw walks the kept set in ascending token id: with weights
// w = exp((logit - max) / T) (f32) and total = their sum (f64), the token is the first kept id
// whose cumulative weight exceeds u * total (the last kept id if rounding leaves none), so the
// device sampler can reproduce it. Each row's result depends only on that row, its params and
// its state, never on the batch. A sample with a grammar (SamplingState::matcher) first has every
// token its grammar does not allow next set to -inf; when the logits processors then leave no
// token (min_tokens masking the end the grammar needs), the grammar wins: the most likely
// allowed token is taken. A reasoning budget's forced close (SamplingState::forced_token) is a
// one-token mask on top of the grammar's. Logprobs are the raw model log-softmax (vLLM's default),
// not the processed distribution. Not thread-safe: one Sampler per thread (buffers are reused).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/generate_request.h"
#include "engine/runner/sampling_state.h"
#include "engine/sampling_params.h"

namespace llmserve {

struct SampleResult {
  int32_t token_id = -1;
  std::optional<TokenLogprob> logprob;  // set when params.logprobs >= 0
};

struct SampleRow {
  const float* logits = nullptr;  // [vocab_size] raw model logits
  const SamplingParams* params = nullptr;
  SamplingState* state = nullptr;
  // Speculative verification: the draft at this row's next position. Rows of one sample's
  // chain (its consecutive positions, one shared state) all carry their draft except the last
  // (-1); a row is sampled only while every earlier row of its chain drew its draft, so the
  // chain yields the accepted drafts and one sampled token, exactly as decoding one by one.
  int32_t draft = -1;
  // Prompt scoring: the token at this row's next position. The row is not sampled (state is
  // untouched, draft is -1); its result is that token with its raw logprob, rank and the top
  // params->prompt_logprobs.
  int32_t score = -1;
};

class Sampler {
 public:
  static constexpr float kGreedyTemperature = 1e-5f;
  static constexpr int32_t kHeapTopK = 256;  // top_k up to this uses a heap, else nth_element

  // eos_ids: the tokens that end generation (the tokenizer's stop ids); min_tokens masks them.
  Sampler(int32_t vocab_size, std::vector<int32_t> eos_ids);

  // logits.size() must be vocab_size. Appends the chosen token to `state`.
  SampleResult sample(std::span<const float> logits, const SamplingParams& params,
                      SamplingState& state);
  std::vector<SampleResult> sample_batch(std::span<const SampleRow> rows);
  // The raw log-softmax of `token` with its rank and the top-n (a scored prompt row).
  SampleResult score(std::span<const float> logits, int32_t token, int32_t n);

  int32_t vocab_size() const { return vocab_size_; }
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }

 private:
  int32_t argmax(std::span<const float> logits) const;  // -1 when no finite logit
  int32_t draw(const SamplingParams& params, double u);
  void select_top_k(int32_t k);
  void select_top_p(float top_p);
  void sort_candidates_by_id();
  TokenLogprob logprobs(std::span<const float> raw, int32_t token, int32_t n);

  int32_t vocab_size_;
  std::vector<int32_t> eos_ids_;
  std::vector<float> work_;     // processed logits
  std::vector<int32_t> cand_;   // candidate ids
  std::vector<uint8_t> marks_;  // [vocab] scratch for sort_candidates_by_id, all zero between uses
  std::vector<float> weights_;  // [vocab]: exp((logit - max) / T), set for candidates
  std::vector<int32_t> ids_;    // scratch for logprob top-N
  std::vector<uint32_t> mask_;  // a grammar's allowed-token bitmask
};

}  // namespace llmserve
