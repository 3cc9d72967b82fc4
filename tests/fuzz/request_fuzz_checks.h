// Invariants every accepted request must hold, shared by the request fuzz targets: prompt ids in
// the vocab, prompt + max_tokens within the context, and the engine-side checks run as the
// routes run them, a structured-output spec within the limits. A violation aborts (the fuzzer
// reports it as a crash).
#pragma once

#include <cstdlib>
#include <optional>
#include <vector>

#include "server/common/generation_request.h"
#include "server/common/request_limits.h"
#include "server/common/structured_output.h"

namespace llmserve::fuzz {

inline RequestLimits fuzz_limits(int32_t vocab) {
  RequestLimits l;
  l.vocab_size = vocab;
  l.max_model_len = 2048;
  l.model_name = "fuzz-model";
  return l;
}

inline void check_accepted(const GenerationRequest& request, const RequestLimits& limits) {
  const auto& prompts = request.prompt_token_ids;
  if (prompts.empty()) std::abort();
  if (request.grammar && !validate_structured_output(*request.grammar, limits).is_ok()) {
    std::abort();
  }
  for (const auto& p : prompts) {
    for (int32_t id : p) {
      if (id < 0 || id >= limits.vocab_size) std::abort();
    }
    if (static_cast<int64_t>(p.size()) + request.params.max_tokens > limits.max_model_len) {
      std::abort();
    }
  }
  if (!request.params.validate(limits.vocab_size, limits.max_logprobs).is_ok()) return;
  auto reqs = make_generate_requests(request, prompts, "fuzz", std::nullopt);
  if (reqs.size() != prompts.size()) std::abort();
}

}  // namespace llmserve::fuzz
