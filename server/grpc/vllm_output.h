// The engine's StepOutputs as vllm.grpc.engine.GenerateResponse messages. Streamed: each output
// with new tokens is a GenerateStreamChunk (the delta, with its logprobs; the prompt's logprobs
// on the chunk that carries them); a finished choice then gets a GenerateComplete without
// output_ids. Not streamed: one GenerateComplete per choice, with all its tokens and logprobs,
// sent when the choice finishes. Counts are per choice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/generate_request.h"
#include "vllm/grpc/engine/vllm_engine.pb.h"

namespace llmserve {

class VllmResponseBuilder {
 public:
  // prompt: the prompt's token ids; stops / stop_token_ids: the request's (to tell which kind
  // of stop a choice matched).
  VllmResponseBuilder(bool stream, int32_t n, std::vector<int32_t> prompt,
                      std::vector<std::string> stops, std::vector<int32_t> stop_token_ids);

  // Appends the messages `o` makes (none, a chunk, a complete, or both) to `out`.
  void add(const StepOutput& o, std::vector<::vllm::grpc::engine::GenerateResponse>* out);

  // "stop", "length", "abort" (abort and timeout), "error".
  static const char* finish_reason(FinishReason r);

 private:
  struct Choice {
    std::vector<uint32_t> ids;
    ::vllm::grpc::engine::OutputLogProbs logprobs;
    bool has_logprobs = false;
  };
  void fill_input_logprobs(const std::vector<TokenLogprob>& lps);
  void fill_complete(const StepOutput& o, Choice& c, ::vllm::grpc::engine::GenerateComplete* m);

  const bool stream_;
  const std::vector<int32_t> prompt_;
  const std::vector<std::string> stops_;
  const std::vector<int32_t> stop_token_ids_;
  std::vector<Choice> choices_;
  ::vllm::grpc::engine::InputLogProbs input_logprobs_;
  bool has_input_logprobs_ = false;
};

}  // namespace llmserve
