#include "server/http/generation_fields.h"

#include <limits>

#include "server/common/kv_transfer_params.h"
#include "server/http/json_fields.h"
#include "server/http/structured_output_json.h"

namespace llmserve {

using json_fields::field_error;
using json_fields::present;
using nlohmann::json;

namespace {

Status read_stop(const json& body, std::vector<std::string>* out) {
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
  *out = std::move(stops);
  return Status::ok();
}

Status read_logit_bias(const json& body, const RequestLimits& limits,
                       std::map<int32_t, float>* out) {
  if (!present(body, "logit_bias")) return Status::ok();
  const json& v = body.at("logit_bias");
  if (!v.is_object()) return field_error("logit_bias", "expected an object of token id -> bias");
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& key = it.key();
    int64_t id = -1;
    bool digits = !key.empty() && key.size() <= 10;
    for (char c : key) digits = digits && c >= '0' && c <= '9';
    if (digits) id = std::stoll(key);
    if (!digits || id > std::numeric_limits<int32_t>::max()) {
      return field_error("logit_bias", "key '" + key + "' is not a token id in [0, " +
                                           std::to_string(limits.vocab_size) + ")");
    }
    if (!it.value().is_number()) {
      return field_error("logit_bias", "bias for token " + key + " must be a number");
    }
    (*out)[static_cast<int32_t>(id)] = static_cast<float>(it.value().get<double>());
  }
  return Status::ok();
}

Status read_token_id_list(const json& body, const char* key, std::vector<int32_t>* out) {
  if (!present(body, key)) return Status::ok();
  const json& v = body.at(key);
  if (!v.is_array()) return field_error(key, "expected a list of integers");
  for (const auto& x : v) {
    auto id = json_fields::integer_value(x, key);
    if (!id.is_ok()) return field_error(key, "expected a list of integers");
    if (*id < 0 || *id > std::numeric_limits<int32_t>::max()) {
      return field_error(key, "token ids must be non-negative 32-bit integers");
    }
    out->push_back(static_cast<int32_t>(*id));
  }
  return Status::ok();
}

Status read_stream(const json& body, GenerationRequest* f) {
  LLMSERVE_RETURN_IF_ERROR(json_fields::read_bool(body, "stream", &f->stream));
  if (!present(body, "stream_options")) return Status::ok();
  const json& so = body.at("stream_options");
  if (!so.is_object()) return field_error("stream_options", "expected an object");
  if (!f->stream) {
    return field_error("stream_options", "stream_options is only allowed when stream is true");
  }
  Status st = json_fields::read_bool(so, "include_usage", &f->include_usage);
  if (!st.is_ok()) return field_error("stream_options.include_usage", "expected a boolean");
  return Status::ok();
}

}  // namespace

Status read_generation_fields(const json& body, const RequestLimits& limits,
                              GenerationRequest* out) {
  using namespace json_fields;
  GenerationRequest& f = *out;
  SamplingParams& p = f.params;
  limits.default_sampling.apply(&p);  // the model's defaults; the body's own fields win
  LLMSERVE_RETURN_IF_ERROR(read_string(body, "model", &f.model));
  if (present(body, "max_tokens") || present(body, "max_completion_tokens")) {
    f.max_tokens_given = true;
    // Two names for one field: a negative count is reported under the name given.
    for (const char* key : {"max_tokens", "max_completion_tokens"}) {
      if (!present(body, key)) continue;
      LLMSERVE_RETURN_IF_ERROR(read_int32_value(body, key, &p.max_tokens));
      f.max_tokens_field = key;
      if (p.max_tokens < 0) return max_tokens_error(key, p.max_tokens);
    }
  }
  LLMSERVE_RETURN_IF_ERROR(read_float_value(body, "temperature", &p.temperature));
  LLMSERVE_RETURN_IF_ERROR(read_float_value(body, "top_p", &p.top_p));
  LLMSERVE_RETURN_IF_ERROR(read_int32_value(body, "top_k", &p.top_k));
  LLMSERVE_RETURN_IF_ERROR(read_float_value(body, "min_p", &p.min_p));
  LLMSERVE_RETURN_IF_ERROR(read_float_value(body, "presence_penalty", &p.presence_penalty));
  LLMSERVE_RETURN_IF_ERROR(read_float_value(body, "frequency_penalty", &p.frequency_penalty));
  LLMSERVE_RETURN_IF_ERROR(read_float_value(body, "repetition_penalty", &p.repetition_penalty));
  LLMSERVE_RETURN_IF_ERROR(read_logit_bias(body, limits, &p.logit_bias));
  if (present(body, "seed")) {
    const json& s = body.at("seed");
    if (s.is_number_unsigned()) {
      p.seed = s.get<uint64_t>();  // the whole unsigned 64-bit range
    } else {
      LLMSERVE_ASSIGN_OR_RETURN(const int64_t seed, integer_value(s, "seed"));
      p.seed = static_cast<uint64_t>(seed);
    }
  }
  LLMSERVE_RETURN_IF_ERROR(read_stop(body, &p.stop));
  LLMSERVE_RETURN_IF_ERROR(read_token_id_list(body, "stop_token_ids", &p.stop_token_ids));
  LLMSERVE_RETURN_IF_ERROR(read_bool(body, "ignore_eos", &p.ignore_eos));
  LLMSERVE_RETURN_IF_ERROR(read_int32_value(body, "min_tokens", &p.min_tokens));
  LLMSERVE_RETURN_IF_ERROR(
      read_bool(body, "include_stop_str_in_output", &p.include_stop_str_in_output));
  LLMSERVE_RETURN_IF_ERROR(read_bool(body, "skip_special_tokens", &p.skip_special_tokens));
  LLMSERVE_RETURN_IF_ERROR(read_int32_value(body, "n", &p.n));
  if (present(body, "prompt_logprobs")) {
    int32_t asked = 0;
    LLMSERVE_RETURN_IF_ERROR(read_int32_value(body, "prompt_logprobs", &asked));
    f.prompt_logprobs = asked;
  }
  if (present(body, "best_of")) {
    int32_t best_of = p.n;
    LLMSERVE_RETURN_IF_ERROR(read_int32_value(body, "best_of", &best_of));
    if (best_of != p.n) return field_error("best_of", "best_of other than n is not supported");
  }
  LLMSERVE_RETURN_IF_ERROR(read_stream(body, &f));
  LLMSERVE_RETURN_IF_ERROR(read_int32_value(body, "priority", &f.priority));
  if (present(body, "timeout")) {
    double t = 0;
    LLMSERVE_RETURN_IF_ERROR(read_double_value(body, "timeout", &t));
    f.timeout_seconds = t;
  }
  LLMSERVE_RETURN_IF_ERROR(read_string(body, "user", &f.user));
  if (auto salt = body.find("cache_salt"); salt != body.end() && !salt->is_null()) {
    if (!salt->is_string() || salt->get_ref<const std::string&>().empty()) {
      return field_error("cache_salt", "must be a non-empty string if provided (as in vLLM)");
    }
    f.cache_salt = salt->get<std::string>();
  }
  if (auto kt = body.find("kv_transfer_params"); kt != body.end()) {
    LLMSERVE_ASSIGN_OR_RETURN(f.kv_transfer, parse_kv_transfer_params(*kt, "kv_transfer_params"));
  }
  return read_structured_output(body, limits, &f.grammar);
}

}  // namespace llmserve
