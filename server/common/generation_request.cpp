#include "server/common/generation_request.h"

#include <algorithm>
#include <limits>

#include "server/common/field_checks.h"
#include "server/common/scoring_limit.h"
#include "server/common/structured_output.h"

namespace llmserve {

namespace {

constexpr int32_t kMaxInt = std::numeric_limits<int32_t>::max();

Status check_stop(const std::vector<std::string>& stops, const RequestLimits& limits) {
  if (static_cast<int64_t>(stops.size()) > limits.max_stop_strings) {
    return field_error("stop", "at most " + std::to_string(limits.max_stop_strings) +
                                   " stop strings are allowed, got " +
                                   std::to_string(stops.size()));
  }
  for (const auto& s : stops) {
    if (s.empty()) return field_error("stop", "stop strings must not be empty");
    if (static_cast<int64_t>(s.size()) > limits.max_stop_string_bytes) {
      return field_error("stop", "a stop string is longer than " +
                                     std::to_string(limits.max_stop_string_bytes) + " bytes");
    }
  }
  return Status::ok();
}

Status check_logit_bias(const std::map<int32_t, float>& bias, const RequestLimits& limits) {
  if (static_cast<int64_t>(bias.size()) > limits.max_logit_bias) {
    return field_error("logit_bias",
                       "at most " + std::to_string(limits.max_logit_bias) + " entries are allowed");
  }
  for (const auto& [id, b] : bias) {
    const std::string key = std::to_string(id);
    if (id < 0 || id >= limits.vocab_size) {
      return field_error("logit_bias", "key '" + key + "' is not a token id in [0, " +
                                           std::to_string(limits.vocab_size) + ")");
    }
    if (!(b >= -100.0f && b <= 100.0f)) {
      return field_error("logit_bias", "bias for token " + key + " must be in [-100, 100]");
    }
  }
  return Status::ok();
}

Status check_sampling(const RequestLimits& limits, const GenerationRequest& req) {
  const SamplingParams& p = req.params;
  if (req.max_tokens_given && p.max_tokens < 0) {
    return max_tokens_error(req.max_tokens_field, p.max_tokens);
  }
  LLMSERVE_RETURN_IF_ERROR(check_number_range("temperature", p.temperature, 0.0, 2.0));
  LLMSERVE_RETURN_IF_ERROR(check_number_range("top_p", p.top_p, 0.0, 1.0, /*lo_open=*/true));
  LLMSERVE_RETURN_IF_ERROR(check_int_range("top_k", p.top_k, -1, kMaxInt));
  LLMSERVE_RETURN_IF_ERROR(check_number_range("min_p", p.min_p, 0.0, 1.0));
  LLMSERVE_RETURN_IF_ERROR(check_number_range("presence_penalty", p.presence_penalty, -2.0, 2.0));
  LLMSERVE_RETURN_IF_ERROR(check_number_range("frequency_penalty", p.frequency_penalty, -2.0, 2.0));
  LLMSERVE_RETURN_IF_ERROR(
      check_number_range("repetition_penalty", p.repetition_penalty, 0.0, 10.0, /*lo_open=*/true));
  LLMSERVE_RETURN_IF_ERROR(check_logit_bias(p.logit_bias, limits));
  LLMSERVE_RETURN_IF_ERROR(check_stop(p.stop, limits));
  if (static_cast<int64_t>(p.stop_token_ids.size()) > limits.max_stop_token_ids) {
    return field_error("stop_token_ids", "at most " + std::to_string(limits.max_stop_token_ids) +
                                             " entries are allowed");
  }
  LLMSERVE_RETURN_IF_ERROR(check_token_ids(p.stop_token_ids, limits.vocab_size, "stop_token_ids"));
  LLMSERVE_RETURN_IF_ERROR(check_int_range("min_tokens", p.min_tokens, 0, kMaxInt));
  if (req.max_tokens_given && p.min_tokens > p.max_tokens) {
    return field_error("min_tokens",
                       "must not exceed max_tokens (" + std::to_string(p.max_tokens) + ")");
  }
  LLMSERVE_RETURN_IF_ERROR(check_int_range("n", p.n, 1, limits.max_n));
  return Status::ok();
}

Status check_prompts(const RequestLimits& limits, const GenerationRequest& req) {
  const size_t count = req.prompt_texts.size() + req.prompt_token_ids.size();
  if (count == 0) return field_error("prompt", "is required");
  if (!req.prompt_texts.empty() && !req.prompt_token_ids.empty()) {
    return field_error("prompt", "give text prompts or token-id prompts, not both");
  }
  if (static_cast<int64_t>(count) > limits.max_choices) {
    return field_error("prompt",
                       "at most " + std::to_string(limits.max_choices) + " prompts are allowed");
  }
  const int64_t choices = static_cast<int64_t>(count) * req.params.n;
  if (choices > limits.max_choices) {
    return field_error("n", "prompts x n = " + std::to_string(choices) + " exceeds the limit of " +
                                std::to_string(limits.max_choices));
  }
  for (const auto& ids : req.prompt_token_ids) {
    if (ids.empty()) return field_error("prompt", "must not be empty");
    LLMSERVE_RETURN_IF_ERROR(check_token_ids(ids, limits.vocab_size, "prompt"));
  }
  return Status::ok();
}

}  // namespace

Status max_tokens_error(std::string_view field, int64_t value) {
  return field_error(field,
                     "must be >= 1, or 0 to score the prompt only (with prompt_logprobs, "
                     "or echo on /v1/completions); got " +
                         std::to_string(value));
}

Status validate_generation_request(const RequestLimits& limits, GenerationRequest* req) {
  LLMSERVE_RETURN_IF_ERROR(check_model_name(req->model, limits.model_name));
  LLMSERVE_RETURN_IF_ERROR(check_sampling(limits, *req));
  SamplingParams& p = req->params;
  if (p.top_k > limits.vocab_size && limits.vocab_size > 0) p.top_k = limits.vocab_size;
  if (req->prompt_logprobs) {
    LLMSERVE_RETURN_IF_ERROR(
        check_int_range("prompt_logprobs", *req->prompt_logprobs, 0, limits.max_logprobs));
    if (req->stream) {
      return field_error("prompt_logprobs", "is not available with stream: true (as in vLLM)");
    }
  }
  LLMSERVE_RETURN_IF_ERROR(check_int_range("priority", req->priority, -1000000, 1000000));
  if (req->timeout_seconds) {
    LLMSERVE_RETURN_IF_ERROR(check_number_range("timeout", *req->timeout_seconds, 0.0,
                                                limits.max_timeout_seconds, /*lo_open=*/true));
  }
  if (req->user.size() > 256) return field_error("user", "must be at most 256 bytes");
  if (req->cache_salt.size() > 1024) {
    return field_error("cache_salt", "must be at most 1024 bytes");
  }
  if (req->logprobs) {
    LLMSERVE_RETURN_IF_ERROR(check_int_range("logprobs", *req->logprobs, 0, limits.max_logprobs));
  }
  if (req->echo && p.n > 1) {
    return field_error("echo", "echo with n > 1 is not supported (each prompt is echoed once)");
  }
  p.logprobs = req->logprobs.value_or(-1);
  p.prompt_logprobs = req->prompt_logprobs.value_or(-1);
  // echo with logprobs scores the prompt with the same top-N.
  if (req->echo && req->logprobs) p.prompt_logprobs = std::max(p.prompt_logprobs, *req->logprobs);
  const bool scores_prompt = req->echo || p.prompt_logprobs >= 0;
  if (req->max_tokens_given && p.max_tokens == 0 && !scores_prompt) {
    return max_tokens_error(req->max_tokens_field, 0);
  }
  LLMSERVE_RETURN_IF_ERROR(check_prompts(limits, *req));
  if (req->grammar) LLMSERVE_RETURN_IF_ERROR(validate_structured_output(*req->grammar, limits));
  return Status::ok();
}

Status prepare_prompts(const Tokenizer& tokenizer, const RequestLimits& limits, PromptStyle style,
                       GenerationRequest* req) {
  const bool chat = style == PromptStyle::kChat;
  // Encoding stops once a prompt passes the whole context: such a request is over the limit
  // whatever max_tokens is, and a huge prompt costs what the context does, not its length.
  // Prompts up to the context are counted exactly (fit_context names their size).
  const int64_t fits = std::max<int64_t>(limits.max_model_len, 0);
  int64_t over_by_at_least = -1;  // the longest over-limit prompt has at least this many tokens
  if (!req->prompt_texts.empty()) {
    req->prompt_token_ids.clear();
    for (const auto& text : req->prompt_texts) {
      LimitedEncoding e = chat ? tokenizer.encode_limited(text, static_cast<size_t>(fits),
                                                          /*add_special=*/false,
                                                          /*parse_special=*/true)
                               : tokenizer.encode_limited(text, static_cast<size_t>(fits));
      if (e.over_limit) {
        over_by_at_least =
            std::max<int64_t>(over_by_at_least, std::max<int64_t>(fits + 1, e.ids.size()));
        e.ids.clear();
        e.ids.shrink_to_fit();
      } else if (e.ids.empty()) {
        return chat ? field_error("messages", "rendered to an empty prompt")
                    : field_error("prompt", "must not be empty");
      }
      req->prompt_token_ids.push_back(std::move(e.ids));
    }
  }
  if (over_by_at_least >= 0) {
    return context_exceeded(over_by_at_least, /*lower_bound=*/true, limits, *req, style);
  }
  if (req->prompt_token_ids.empty()) return field_error("prompt", "is required");
  if (req->echo) {
    req->echo_texts.clear();
    for (size_t i = 0; i < req->prompt_token_ids.size(); ++i) {
      req->echo_texts.push_back(i < req->prompt_texts.size()
                                    ? req->prompt_texts[i]
                                    : tokenizer.decode(req->prompt_token_ids[i]));
    }
  }
  LLMSERVE_RETURN_IF_ERROR(check_prompt_scoring(limits, *req));
  size_t longest = 0;
  for (const auto& ids : req->prompt_token_ids) longest = std::max(longest, ids.size());
  return fit_context(static_cast<int64_t>(longest), limits,
                     chat ? 0 : limits.default_completion_max_tokens, req, style);
}

Status context_exceeded(int64_t prompt_tokens, bool lower_bound, const RequestLimits& limits,
                        const GenerationRequest& req, PromptStyle style) {
  const std::string field = style == PromptStyle::kChat ? "messages" : "prompt";
  const int64_t asked = req.max_tokens_given ? req.params.max_tokens : 1;
  const std::string more = lower_bound ? "more than " : "";
  const int64_t prompt = lower_bound ? prompt_tokens - 1 : prompt_tokens;
  return out_of_range(
      field + ": This model's maximum context length is " + std::to_string(limits.max_model_len) +
      " tokens. However, you requested " + more + std::to_string(prompt + asked) + " tokens (" +
      more + std::to_string(prompt) + " in the " + field + ", " + std::to_string(asked) +
      " in the completion). Please reduce the length of the " + field + " or completion.");
}

Status fit_context(int64_t prompt_tokens, const RequestLimits& limits, int32_t default_max,
                   GenerationRequest* req, PromptStyle style) {
  const int64_t ctx = limits.max_model_len;
  SamplingParams& p = req->params;
  if (prompt_tokens >= ctx || (req->max_tokens_given && prompt_tokens + p.max_tokens > ctx)) {
    return context_exceeded(prompt_tokens, /*lower_bound=*/false, limits, *req, style);
  }
  if (!req->max_tokens_given) {
    const int64_t room = ctx - prompt_tokens;
    const int64_t want = default_max > 0 ? std::min<int64_t>(default_max, room) : room;
    p.max_tokens = static_cast<int32_t>(want);
    if (p.min_tokens > p.max_tokens) {
      return field_error("min_tokens",
                         "must not exceed max_tokens (" + std::to_string(p.max_tokens) + ")");
    }
  }
  return Status::ok();
}

Status check_token_ids(const std::vector<int32_t>& ids, int32_t vocab_size, const char* field) {
  for (int32_t id : ids) {
    if (id < 0 || (vocab_size > 0 && id >= vocab_size)) {
      return field_error(field, "token id " + std::to_string(id) +
                                    " is out of the vocabulary [0, " + std::to_string(vocab_size) +
                                    ")");
    }
  }
  return Status::ok();
}

std::vector<GenerateRequest> make_generate_requests(
    const GenerationRequest& req, std::vector<std::vector<int32_t>> prompts,
    const std::string& external_id, std::optional<std::chrono::steady_clock::time_point> deadline) {
  std::vector<GenerateRequest> out;
  out.reserve(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateRequest r;
    r.external_id = prompts.size() == 1 ? external_id : external_id + "-" + std::to_string(i);
    r.prompt_token_ids = std::move(prompts[i]);
    r.params = req.params;
    r.priority = req.priority;
    r.cache_salt = req.cache_salt;
    r.deadline = deadline;
    r.reasoning_budget = reasoning_budget(req.reasoning, req.reasoning_budget);
    if (prompts.size() == 1) r.kv_transfer = req.kv_transfer;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace llmserve
