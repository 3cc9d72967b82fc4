#include "server/http/completion_request.h"

#include <cmath>
#include <limits>

#include "server/http/generation_fields.h"
#include "server/http/json_fields.h"
#include "server/http/structured_output_json.h"

namespace llmserve {

using json_fields::field_error;
using json_fields::present;
using nlohmann::json;

namespace {

// Token ids as written; the vocabulary is checked by validation.
Result<std::vector<int32_t>> ids_from_json(const json& arr) {
  std::vector<int32_t> ids;
  ids.reserve(arr.size());
  for (const auto& x : arr) {
    const bool fractional =
        !x.is_number() || (x.is_number_float() && std::trunc(x.get<double>()) != x.get<double>());
    if (fractional) return field_error("prompt", "a token-id prompt must hold only integers");
    auto id = json_fields::integer_value(x, "prompt");
    const bool fits = id.is_ok() && *id >= std::numeric_limits<int32_t>::min() &&
                      *id <= std::numeric_limits<int32_t>::max();
    if (!fits) return field_error("prompt", "token id " + x.dump() + " is out of the vocabulary");
    ids.push_back(static_cast<int32_t>(*id));
  }
  return ids;
}

Status read_prompts(const json& body, GenerationRequest* out) {
  if (!present(body, "prompt")) return field_error("prompt", "is required");
  const json& p = body.at("prompt");
  const char* kShapes = "expected a string, a list of strings, or a list of token ids";
  if (p.is_string()) {
    out->prompt_texts.push_back(p.get<std::string>());
    return Status::ok();
  }
  if (!p.is_array()) return field_error("prompt", kShapes);
  if (p.empty()) return field_error("prompt", "must not be an empty list");
  if (p.front().is_number()) {
    LLMSERVE_ASSIGN_OR_RETURN(auto ids, ids_from_json(p));
    out->prompt_token_ids.push_back(std::move(ids));
  } else if (p.front().is_string()) {
    for (const auto& s : p) {
      if (!s.is_string()) return field_error("prompt", "a list of prompts must hold only strings");
      out->prompt_texts.push_back(s.get<std::string>());
    }
  } else if (p.front().is_array()) {
    for (const auto& arr : p) {
      if (!arr.is_array() || arr.empty()) {
        return field_error("prompt", "a list of token-id prompts must hold non-empty lists");
      }
      LLMSERVE_ASSIGN_OR_RETURN(auto ids, ids_from_json(arr));
      out->prompt_token_ids.push_back(std::move(ids));
    }
  } else {
    return field_error("prompt", kShapes);
  }
  return Status::ok();
}

}  // namespace

Result<GenerationRequest> parse_completion_request(std::string_view body_text,
                                                   const Tokenizer& tokenizer,
                                                   const RequestLimits& limits) {
  LLMSERVE_ASSIGN_OR_RETURN(json body, json_fields::parse_object(body_text, limits.json_bounds));
  GenerationRequest out;
  LLMSERVE_RETURN_IF_ERROR(json_fields::read_bool(body, "echo", &out.echo));
  if (present(body, "suffix")) {
    const json& s = body.at("suffix");
    if (!s.is_string()) return field_error("suffix", "expected a string");
    if (!s.get<std::string>().empty()) {
      return field_error("suffix", "suffix is not supported by this server");
    }
  }
  LLMSERVE_RETURN_IF_ERROR(read_generation_fields(body, limits, &out));
  if (out.grammar && out.grammar->kind == GrammarKind::kJsonSchema) {
    // Again in the caller's property order (the text is within the bounds already).
    keep_schema_order(nlohmann::ordered_json::parse(body_text, nullptr, false), &*out.grammar);
  }
  if (present(body, "logprobs")) {
    if (body.at("logprobs").is_boolean()) {
      return field_error("logprobs",
                         "expected an integer (the number of top logprobs) for completions");
    }
    int32_t top_n = 0;
    LLMSERVE_RETURN_IF_ERROR(json_fields::read_int32_value(body, "logprobs", &top_n));
    out.logprobs = top_n;
  }
  LLMSERVE_RETURN_IF_ERROR(read_prompts(body, &out));
  // Cheap checks first; tokenization last.
  LLMSERVE_RETURN_IF_ERROR(validate_generation_request(limits, &out));
  LLMSERVE_RETURN_IF_ERROR(prepare_prompts(tokenizer, limits, PromptStyle::kCompletion, &out));
  return out;
}

}  // namespace llmserve
