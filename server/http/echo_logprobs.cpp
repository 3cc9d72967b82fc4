// The prompt side of a response: completions' `echo` (the prompt's text, and its tokens' legacy
// logprobs before the completion's) and vLLM's `prompt_logprobs`.
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

json ResponseBuilder::prompt_logprobs_json(size_t prompt_index) const {
  json out = json::array();
  out.push_back(nullptr);  // the first prompt token has no context to be scored from
  if (prompt_index >= prompt_lps_.size()) return out;
  const size_t n = static_cast<size_t>(std::max(ctx_.prompt_logprobs, 0));
  for (const TokenLogprob& lp : prompt_lps_[prompt_index]) {
    json pos = json::object();
    for (size_t j = 0; j < std::min(n, lp.top.size()); ++j) {
      const TopLogprob& t = lp.top[j];
      pos[std::to_string(t.token_id)] = {{"logprob", t.logprob},
                                         {"rank", static_cast<int64_t>(j) + 1},
                                         {"decoded_token", token_string(t.token_id)}};
    }
    pos[std::to_string(lp.token_id)] = {
        {"logprob", lp.logprob}, {"rank", lp.rank}, {"decoded_token", token_string(lp.token_id)}};
    out.push_back(std::move(pos));
  }
  return out;
}

}  // namespace llmserve
