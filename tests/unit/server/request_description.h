// What a GenerationRequest asks the engine for, as text: tests that read one request through two
// transports compare these, so a mismatch names the field.
#pragma once

#include <ostream>
#include <string>

#include "server/common/generation_request.h"

namespace llmserve::test {

inline void describe_prompt_ids(std::ostream& o, const GenerationRequest& r) {
  for (const auto& ids : r.prompt_token_ids) {
    o << "[";
    for (int32_t id : ids) o << id << ",";
    o << "] ";
  }
}

inline void describe_sampling(std::ostream& o, const SamplingParams& p) {
  o << "temperature=" << p.temperature << " top_k=" << p.top_k << " top_p=" << p.top_p
    << " min_p=" << p.min_p << " rep=" << p.repetition_penalty << " pres=" << p.presence_penalty
    << " freq=" << p.frequency_penalty << " bias=";
  for (const auto& [id, b] : p.logit_bias) o << id << ":" << b << ",";
  o << " seed=" << (p.seed ? std::to_string(*p.seed) : "-") << " max_tokens=" << p.max_tokens
    << " min_tokens=" << p.min_tokens << " stop=";
  for (const auto& s : p.stop) o << "'" << s << "',";
  o << " stop_ids=";
  for (int32_t id : p.stop_token_ids) o << id << ",";
  o << " ignore_eos=" << p.ignore_eos << " incl_stop=" << p.include_stop_str_in_output
    << " skip_special=" << p.skip_special_tokens << " p.logprobs=" << p.logprobs
    << " p.prompt_logprobs=" << p.prompt_logprobs << " n=" << p.n;
}

}  // namespace llmserve::test
