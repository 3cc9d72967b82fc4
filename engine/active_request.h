// The engine thread's state for one submitted request: its stream, and per sample (n of them)
// the sampler state, the stop checker (detokenizer + stop strings) and the token list the batch
// builder reads. Owned by the StepLoop; never touched by other threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/generate_request.h"
#include "engine/pooling/pooling_params.h"
#include "engine/request_stream.h"
#include "engine/runner/sampling_state.h"
#include "engine/runner/stop_checker.h"
#include "engine/spec/draft_gate.h"

namespace llmserve {

struct SampleSlot {
  using Clock = std::chrono::steady_clock;

  SampleSlot(uint64_t seq_id, int32_t index, SamplingState sampling, StopChecker stop,
             std::vector<int32_t> tokens)
      : seq_id(seq_id),
        index(index),
        sampling(std::move(sampling)),
        stop(std::move(stop)),
        tokens(std::move(tokens)) {}

  uint64_t seq_id;  // the Scheduler's request id
  int32_t index;    // StepOutput::index
  SamplingState sampling;
  StopChecker stop;
  std::vector<int32_t> tokens;  // prompt + outputs so far (the batch builder's view)
  int32_t num_generated = 0;
  FinishReason finish = FinishReason::kNone;
  std::optional<Clock::time_point> first_scheduled, first_token, last_token;
  DraftGate draft_gate;  // speculative drafts per step for this sample

  bool finished() const { return finish != FinishReason::kNone; }
};

struct ActiveRequest {
  using Clock = std::chrono::steady_clock;

  uint64_t id = 0;
  std::string external_id;
  SamplingParams params;
  int32_t num_prompt_tokens = 0;
  std::optional<Clock::time_point> deadline;
  std::shared_ptr<RequestStream> stream;
  Clock::time_point arrival{};
  std::vector<std::unique_ptr<SampleSlot>> samples;
  int32_t num_finished = 0;
  int32_t num_cached_prompt_tokens = -1;  // prefix-cache hit of sample 0 at admission
  bool stream_failed = false;             // the reader cancelled or the buffer overflowed
  int32_t draft_tokens = 0, accepted_draft_tokens = 0, verify_steps = 0;  // speculation
  // params.prompt_logprobs >= 0: prompt positions 1.. scored so far (by sample 0's prefill), sent
  // with sample 0's first message.
  std::vector<TokenLogprob> prompt_logprobs;
  bool prompt_logprobs_sent = false;
  // Disaggregated prefill: a producer request's prompt blocks become a lease when it ends.
  bool kv_produce = false;
  uint64_t prompt_hash = 0;
  std::optional<PoolingParams> pooling;  // a pooling request (GenerateRequest::pooling)
  // The prompt's images (GenerateRequest::images) as the batch builder reads them: spans, and
  // each one's features (kept alive by `images`).
  std::vector<PromptImage> images;
  std::vector<ImageSpan> image_spans;
  std::vector<const float*> image_features;

  int32_t completion_tokens() const {
    int32_t n = 0;
    for (const auto& s : samples) n += s->num_generated;
    return n;
  }
  Usage usage() const {
    return {num_prompt_tokens, completion_tokens(),   std::max(num_cached_prompt_tokens, 0),
            draft_tokens,      accepted_draft_tokens, verify_steps};
  }
  bool done() const { return num_finished == static_cast<int32_t>(samples.size()); }
};

}  // namespace llmserve
