// The prompt side of a streamed response: completions' `echo` (the prompt's text, and its
// tokens' legacy logprobs before the completion's). The non-streaming body: final_body.cpp.
#include "server/http/openai_response.h"

#include <algorithm>

namespace llmserve {

using nlohmann::json;

std::string ResponseBuilder::echo_text(size_t prompt_index) const {
  return prompt_index < ctx_.echo_texts.size() ? ctx_.echo_texts[prompt_index] : std::string();
}

json ResponseBuilder::echo_logprobs(size_t prompt_index, size_t* bytes) const {
  // The prompt's scored tokens in the completion's shape, top lists cut to the `logprobs` asked
  // for (the engine scored max(logprobs, prompt_logprobs)), after the first token's nulls.
  std::vector<TokenLogprob> lps;
  if (prompt_index < prompt_lps_.size()) lps = prompt_lps_[prompt_index];
  const auto top = static_cast<size_t>(std::max(ctx_.logprobs, 0));
  for (TokenLogprob& lp : lps) {
    if (lp.top.size() > top) lp.top.resize(top);
  }
  const bool has_first =
      prompt_index < ctx_.prompt_ids.size() && !ctx_.prompt_ids[prompt_index].empty();
  const std::string first = has_first ? token_string(ctx_.prompt_ids[prompt_index].front()) : "";
  size_t at = first.size();
  std::vector<size_t> offsets;
  for (const TokenLogprob& lp : lps) {
    offsets.push_back(at);
    at += token_string(lp.token_id).size();
  }
  *bytes = at;
  json out = logprobs_json(lps, offsets);
  if (has_first) {
    out["tokens"].insert(out["tokens"].begin(), first);
    out["token_logprobs"].insert(out["token_logprobs"].begin(), nullptr);
    out["top_logprobs"].insert(out["top_logprobs"].begin(), nullptr);
    out["text_offset"].insert(out["text_offset"].begin(), 0);
  }
  return out;
}

}  // namespace llmserve
