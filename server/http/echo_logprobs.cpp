// The prompt side of a response: completions' `echo` (the prompt's text, and its tokens' legacy
// logprobs before the completion's) and vLLM's `prompt_logprobs`.
#include "server/http/openai_response.h"

namespace llmserve {

using nlohmann::json;

std::string ResponseBuilder::echo_text(size_t prompt_index) const {
  return prompt_index < ctx_.echo_texts.size() ? ctx_.echo_texts[prompt_index] : std::string();
}

json ResponseBuilder::echo_logprobs(size_t prompt_index, size_t* bytes) const {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       text_offset = json::array();
  size_t at = 0;
  auto add = [&](int32_t id, const TokenLogprob* lp) {
    const std::string tok = token_string(id);
    tokens.push_back(tok);
    text_offset.push_back(at);
    at += tok.size();
    if (lp == nullptr) {
      token_logprobs.push_back(nullptr);
      top.push_back(nullptr);
      return;
    }
    token_logprobs.push_back(lp->logprob);
    json t = json::object();
    const size_t n = std::min(lp->top.size(), static_cast<size_t>(std::max(ctx_.logprobs, 0)));
    for (size_t j = 0; j < n; ++j) t[token_string(lp->top[j].token_id)] = lp->top[j].logprob;
    top.push_back(std::move(t));
  };
  if (prompt_index < ctx_.prompt_ids.size() && !ctx_.prompt_ids[prompt_index].empty()) {
    add(ctx_.prompt_ids[prompt_index].front(), nullptr);
  }
  if (prompt_index < prompt_lps_.size()) {
    for (const TokenLogprob& lp : prompt_lps_[prompt_index]) add(lp.token_id, &lp);
  }
  *bytes = at;
  return json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(token_logprobs)},
              {"top_logprobs", std::move(top)},
              {"text_offset", std::move(text_offset)}};
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
