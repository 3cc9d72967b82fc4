#include "server/grpc/proto_convert.h"

#include <cmath>
#include <optional>
#include <utility>

#include "engine/tokenizer/utf8.h"

namespace llmserve {

using nlohmann::json;

json proto_request_to_json(const v1::GenerateRequest& r) {
  json j = json::object();
  if (!r.model().empty()) j["model"] = r.model();
  if (!r.prompt_token_ids().empty()) {
    j["prompt"] = std::vector<int32_t>(r.prompt_token_ids().begin(), r.prompt_token_ids().end());
  } else {
    j["prompt"] = r.prompt();
  }
  if (r.has_max_tokens()) j["max_tokens"] = r.max_tokens();
  if (r.has_temperature()) j["temperature"] = r.temperature();
  if (r.has_top_p()) j["top_p"] = r.top_p();
  if (r.has_top_k()) j["top_k"] = r.top_k();
  if (r.has_min_p()) j["min_p"] = r.min_p();
  if (r.has_presence_penalty()) j["presence_penalty"] = r.presence_penalty();
  if (r.has_frequency_penalty()) j["frequency_penalty"] = r.frequency_penalty();
  if (r.has_repetition_penalty()) j["repetition_penalty"] = r.repetition_penalty();
  if (!r.logit_bias().empty()) {
    json lb = json::object();
    for (const auto& [id, bias] : r.logit_bias()) {
      lb[id >= 0 ? std::to_string(id) : "invalid" + std::to_string(id)] = bias;
    }
    j["logit_bias"] = std::move(lb);
  }
  if (r.has_seed()) j["seed"] = r.seed();
  if (!r.stop().empty()) j["stop"] = std::vector<std::string>(r.stop().begin(), r.stop().end());
  if (!r.stop_token_ids().empty()) {
    j["stop_token_ids"] =
        std::vector<int32_t>(r.stop_token_ids().begin(), r.stop_token_ids().end());
  }
  if (r.ignore_eos()) j["ignore_eos"] = true;
  if (r.min_tokens() != 0) j["min_tokens"] = r.min_tokens();
  if (r.has_n()) j["n"] = r.n();
  if (r.has_logprobs()) j["logprobs"] = r.logprobs();
  if (r.priority() != 0) j["priority"] = r.priority();
  if (r.include_stop_str_in_output()) j["include_stop_str_in_output"] = true;
  if (r.has_skip_special_tokens()) j["skip_special_tokens"] = r.skip_special_tokens();
  if (r.has_prompt_logprobs()) j["prompt_logprobs"] = r.prompt_logprobs();
  return j;
}

Result<ParsedCompletion> parse_proto_request(const v1::GenerateRequest& req,
                                             const Tokenizer& tokenizer,
                                             const RequestLimits& limits) {
  if (!req.prompt().empty() && !req.prompt_token_ids().empty()) {
    return invalid_argument("prompt: set either prompt or prompt_token_ids, not both");
  }
  // JSON has no NaN / Inf (they would dump as null and read as "absent"): reject them here.
  const std::pair<const char*, std::optional<float>> floats[] = {
      {"temperature", req.has_temperature() ? std::optional(req.temperature()) : std::nullopt},
      {"top_p", req.has_top_p() ? std::optional(req.top_p()) : std::nullopt},
      {"min_p", req.has_min_p() ? std::optional(req.min_p()) : std::nullopt},
      {"presence_penalty",
       req.has_presence_penalty() ? std::optional(req.presence_penalty()) : std::nullopt},
      {"frequency_penalty",
       req.has_frequency_penalty() ? std::optional(req.frequency_penalty()) : std::nullopt},
      {"repetition_penalty",
       req.has_repetition_penalty() ? std::optional(req.repetition_penalty()) : std::nullopt},
  };
  for (const auto& [name, value] : floats) {
    if (value && !std::isfinite(*value)) {
      return invalid_argument(std::string(name) + ": must be a finite number");
    }
  }
  for (const auto& [id, bias] : req.logit_bias()) {
    if (!std::isfinite(bias)) {
      return invalid_argument("logit_bias: bias of token " + std::to_string(id) +
                              " must be a finite number");
    }
  }
  const std::string body =
      proto_request_to_json(req).dump(-1, ' ', false, json::error_handler_t::replace);
  return parse_completion_request(body, tokenizer, limits);
}

void fill_logprobs(const std::vector<TokenLogprob>& lps, const Tokenizer& tok,
                   google::protobuf::RepeatedPtrField<v1::TokenLogprob>* out) {
  for (const auto& lp : lps) {
    v1::TokenLogprob* p = out->Add();
    p->set_token_id(lp.token_id);
    p->set_token(utf8_sanitize(tok.token_bytes(lp.token_id)));
    p->set_logprob(lp.logprob);
    p->set_rank(lp.rank);
    for (const auto& t : lp.top) {
      v1::TopLogprob* q = p->add_top_logprobs();
      q->set_token_id(t.token_id);
      q->set_token(utf8_sanitize(tok.token_bytes(t.token_id)));
      q->set_logprob(t.logprob);
    }
  }
}

void fill_usage(const Usage& u, v1::Usage* out) {
  out->set_prompt_tokens(u.prompt_tokens);
  out->set_completion_tokens(u.completion_tokens);
  out->set_total_tokens(u.prompt_tokens + u.completion_tokens);
  out->set_cached_prompt_tokens(u.cached_prompt_tokens);
}

}  // namespace llmserve
