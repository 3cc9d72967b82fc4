#include "server/http/generation_fields.h"

#include <limits>

#include "server/http/json_fields.h"

namespace llmserve {

using json_fields::field_error;
using json_fields::present;
using nlohmann::json;

namespace {

Status parse_stop(const json& body, const RequestLimits& limits, std::vector<std::string>* out) {
  if (!present(body, "stop")) return Status::ok();
  const json& v = body.at("stop");
  std::vector<std::string> stops;
  if (v.is_string()) {
    stops.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    for (const auto& s : v) {
      if (!s.is_string()) return field_error("stop", "expected a string or a list of strings");
      stops.push_back(s.get<std::string>());
    }
  } else {
    return field_error("stop", "expected a string or a list of strings");
  }
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
  *out = std::move(stops);
  return Status::ok();
}

Status parse_logit_bias(const json& body, const RequestLimits& limits,
                        std::map<int32_t, float>* out) {
  if (!present(body, "logit_bias")) return Status::ok();
  const json& v = body.at("logit_bias");
  if (!v.is_object()) return field_error("logit_bias", "expected an object of token id -> bias");
  if (static_cast<int64_t>(v.size()) > limits.max_logit_bias) {
    return field_error("logit_bias",
                       "at most " + std::to_string(limits.max_logit_bias) + " entries are allowed");
  }
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& key = it.key();
    int64_t id = -1;
    bool digits = !key.empty() && key.size() <= 10;
    for (char c : key) digits = digits && c >= '0' && c <= '9';
    if (digits) id = std::stoll(key);
    if (!digits || id >= limits.vocab_size) {
      return field_error("logit_bias", "key '" + key + "' is not a token id in [0, " +
                                           std::to_string(limits.vocab_size) + ")");
    }
    if (!it.value().is_number()) {
      return field_error("logit_bias", "bias for token " + key + " must be a number");
    }
    const double b = it.value().get<double>();
    if (!(b >= -100.0 && b <= 100.0)) {
      return field_error("logit_bias", "bias for token " + key + " must be in [-100, 100]");
    }
    (*out)[static_cast<int32_t>(id)] = static_cast<float>(b);
  }
  return Status::ok();
}

Status parse_int_list(const json& body, const char* key, size_t max_len,
                      std::vector<int32_t>* out) {
  if (!present(body, key)) return Status::ok();
  const json& v = body.at(key);
  if (!v.is_array()) return field_error(key, "expected a list of integers");
  if (v.size() > max_len) {
    return field_error(key, "at most " + std::to_string(max_len) + " entries are allowed");
  }
  for (const auto& x : v) {
    if (!x.is_number_integer()) return field_error(key, "expected a list of integers");
    const int64_t id = x.is_number_unsigned() ? -1 : x.get<int64_t>();
    if (x.is_number_unsigned() && x.get<uint64_t>() <= std::numeric_limits<int32_t>::max()) {
      out->push_back(static_cast<int32_t>(x.get<uint64_t>()));
      continue;
    }
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return field_error(key, "token ids must be non-negative 32-bit integers");
    }
    out->push_back(static_cast<int32_t>(id));
  }
  return Status::ok();
}

}  // namespace

Status parse_generation_fields(const json& body, const RequestLimits& limits,
                               GenerationFields* out) {
  using namespace json_fields;
  GenerationFields f;
  SamplingParams& p = f.params;
  LLMSERVE_RETURN_IF_ERROR(read_string(body, "model", &f.model));
  if (!f.model.empty() && !limits.model_name.empty() && f.model != limits.model_name) {
    return field_error("model", "the model '" + f.model + "' does not exist; this server serves '" +
                                    limits.model_name + "'");
  }
  constexpr int32_t kMaxInt = std::numeric_limits<int32_t>::max();
  int32_t max_tokens = -1;
  // 0 scores the prompt only (echo / prompt_logprobs): require_completion checks it.
  LLMSERVE_RETURN_IF_ERROR(read_int32(body, "max_tokens", 0, kMaxInt, &max_tokens));
  LLMSERVE_RETURN_IF_ERROR(read_int32(body, "max_completion_tokens", 0, kMaxInt, &max_tokens));
  if (max_tokens >= 0) {
    f.max_tokens_given = true;
    p.max_tokens = max_tokens;
  }
  LLMSERVE_RETURN_IF_ERROR(read_float(body, "temperature", 0.0, 2.0, &p.temperature));
  LLMSERVE_RETURN_IF_ERROR(read_float(body, "top_p", 0.0, 1.0, &p.top_p, /*lo_open=*/true));
  LLMSERVE_RETURN_IF_ERROR(read_int32(body, "top_k", -1, kMaxInt, &p.top_k));
  if (p.top_k > limits.vocab_size && limits.vocab_size > 0) p.top_k = limits.vocab_size;
  LLMSERVE_RETURN_IF_ERROR(read_float(body, "min_p", 0.0, 1.0, &p.min_p));
  LLMSERVE_RETURN_IF_ERROR(read_float(body, "presence_penalty", -2.0, 2.0, &p.presence_penalty));
  LLMSERVE_RETURN_IF_ERROR(read_float(body, "frequency_penalty", -2.0, 2.0, &p.frequency_penalty));
  LLMSERVE_RETURN_IF_ERROR(
      read_float(body, "repetition_penalty", 0.0, 10.0, &p.repetition_penalty, /*lo_open=*/true));
  LLMSERVE_RETURN_IF_ERROR(parse_logit_bias(body, limits, &p.logit_bias));
  if (present(body, "seed")) {
    const json& s = body.at("seed");
    if (!s.is_number_integer()) return field_error("seed", "expected an integer");
    p.seed = s.is_number_unsigned() ? s.get<uint64_t>() : static_cast<uint64_t>(s.get<int64_t>());
  }
  LLMSERVE_RETURN_IF_ERROR(parse_stop(body, limits, &p.stop));
  LLMSERVE_RETURN_IF_ERROR(parse_int_list(
      body, "stop_token_ids", static_cast<size_t>(limits.max_stop_token_ids), &p.stop_token_ids));
  LLMSERVE_RETURN_IF_ERROR(check_token_ids(p.stop_token_ids, limits.vocab_size, "stop_token_ids"));
  LLMSERVE_RETURN_IF_ERROR(read_bool(body, "ignore_eos", &p.ignore_eos));
  LLMSERVE_RETURN_IF_ERROR(read_int32(body, "min_tokens", 0, kMaxInt, &p.min_tokens));
  if (f.max_tokens_given && p.min_tokens > p.max_tokens) {
    return field_error("min_tokens",
                       "must not exceed max_tokens (" + std::to_string(p.max_tokens) + ")");
  }
  LLMSERVE_RETURN_IF_ERROR(
      read_bool(body, "include_stop_str_in_output", &p.include_stop_str_in_output));
  LLMSERVE_RETURN_IF_ERROR(read_bool(body, "skip_special_tokens", &p.skip_special_tokens));
  LLMSERVE_RETURN_IF_ERROR(read_int32(body, "n", 1, limits.max_n, &p.n));
  LLMSERVE_RETURN_IF_ERROR(
      read_int32(body, "prompt_logprobs", 0, limits.max_logprobs, &p.prompt_logprobs));
  if (present(body, "best_of")) {
    int32_t best_of = p.n;
    LLMSERVE_RETURN_IF_ERROR(read_int32(body, "best_of", 1, limits.max_n, &best_of));
    if (best_of != p.n) return field_error("best_of", "best_of other than n is not supported");
  }
  LLMSERVE_RETURN_IF_ERROR(read_bool(body, "stream", &f.stream));
  if (present(body, "stream_options")) {
    const json& so = body.at("stream_options");
    if (!so.is_object()) return field_error("stream_options", "expected an object");
    if (!f.stream) {
      return field_error("stream_options", "stream_options is only allowed when stream is true");
    }
    Status st = read_bool(so, "include_usage", &f.include_usage);
    if (!st.is_ok()) return field_error("stream_options.include_usage", "expected a boolean");
  }
  if (f.stream && p.prompt_logprobs >= 0) {
    return field_error("prompt_logprobs", "is not available with stream: true (as in vLLM)");
  }
  LLMSERVE_RETURN_IF_ERROR(read_int32(body, "priority", -1000000, 1000000, &f.priority));
  if (present(body, "timeout")) {
    double t = 0;
    LLMSERVE_RETURN_IF_ERROR(
        read_number(body, "timeout", 0.0, limits.max_timeout_seconds, &t, /*lo_open=*/true));
    f.timeout_seconds = t;
  }
  LLMSERVE_RETURN_IF_ERROR(read_string(body, "user", &f.user));
  if (f.user.size() > 256) return field_error("user", "must be at most 256 bytes");
  *out = std::move(f);
  return Status::ok();
}

Status require_completion(const GenerationFields& fields, bool scores_prompt) {
  if (fields.max_tokens_given && fields.params.max_tokens == 0 && !scores_prompt) {
    return json_fields::field_error(
        "max_tokens",
        "must be >= 1 (0 is allowed only to score the prompt: with echo or "
        "prompt_logprobs)");
  }
  return Status::ok();
}

Status fit_context(int64_t prompt_tokens, const RequestLimits& limits, int32_t default_max,
                   GenerationFields* fields) {
  const int64_t ctx = limits.max_model_len;
  if (prompt_tokens >= ctx ||
      (fields->max_tokens_given && prompt_tokens + fields->params.max_tokens > ctx)) {
    const int64_t asked = fields->max_tokens_given ? fields->params.max_tokens : 1;
    return out_of_range("This model's maximum context length is " + std::to_string(ctx) +
                        " tokens. However, you requested " + std::to_string(prompt_tokens + asked) +
                        " tokens (" + std::to_string(prompt_tokens) + " in the messages, " +
                        std::to_string(asked) +
                        " in the completion). Please reduce the length of the messages or "
                        "completion.");
  }
  if (!fields->max_tokens_given) {
    const int64_t room = ctx - prompt_tokens;
    const int64_t want = default_max > 0 ? std::min<int64_t>(default_max, room) : room;
    fields->params.max_tokens = static_cast<int32_t>(want);
    if (fields->params.min_tokens > fields->params.max_tokens) {
      return json_fields::field_error(
          "min_tokens",
          "must not exceed max_tokens (" + std::to_string(fields->params.max_tokens) + ")");
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
    const GenerationFields& fields, std::vector<std::vector<int32_t>> prompts,
    const std::string& external_id, std::optional<std::chrono::steady_clock::time_point> deadline) {
  std::vector<GenerateRequest> out;
  out.reserve(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateRequest r;
    r.external_id = prompts.size() == 1 ? external_id : external_id + "-" + std::to_string(i);
    r.prompt_token_ids = std::move(prompts[i]);
    r.params = fields.params;
    r.priority = fields.priority;
    r.deadline = deadline;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace llmserve
