#include "server/http/completion_request.h"

#include <algorithm>
#include <limits>

#include "server/http/json_fields.h"

namespace llmserve {

using json_fields::field_error;
using json_fields::present;
using nlohmann::json;

namespace {

Result<std::vector<int32_t>> ids_from_json(const json& arr, int32_t vocab_size) {
  std::vector<int32_t> ids;
  ids.reserve(arr.size());
  for (const auto& x : arr) {
    if (!x.is_number_integer()) {
      return field_error("prompt", "a token-id prompt must hold only integers");
    }
    const bool neg = !x.is_number_unsigned() && x.get<int64_t>() < 0;
    const uint64_t u = neg ? 0 : x.get<uint64_t>();
    if (neg || u >= static_cast<uint64_t>(std::max(vocab_size, 0))) {
      return field_error("prompt", "token id " + x.dump() + " is out of the vocabulary [0, " +
                                       std::to_string(vocab_size) + ")");
    }
    ids.push_back(static_cast<int32_t>(u));
  }
  return ids;
}

Result<std::vector<std::vector<int32_t>>> parse_prompts(const json& body,
                                                        const Tokenizer& tokenizer,
                                                        const RequestLimits& limits) {
  if (!present(body, "prompt")) return field_error("prompt", "is required");
  const json& p = body.at("prompt");
  std::vector<std::vector<int32_t>> prompts;
  if (p.is_string()) {
    prompts.push_back(tokenizer.encode(p.get<std::string>()));
  } else if (p.is_array()) {
    if (p.empty()) return field_error("prompt", "must not be an empty list");
    if (p.front().is_number()) {
      LLMSERVE_ASSIGN_OR_RETURN(auto ids, ids_from_json(p, limits.vocab_size));
      prompts.push_back(std::move(ids));
    } else if (p.front().is_string()) {
      if (static_cast<int64_t>(p.size()) > limits.max_choices) {
        return field_error(
            "prompt", "at most " + std::to_string(limits.max_choices) + " prompts are allowed");
      }
      for (const auto& s : p) {
        if (!s.is_string())
          return field_error("prompt", "a list of prompts must hold only strings");
      }
      for (const auto& s : p) prompts.push_back(tokenizer.encode(s.get<std::string>()));
    } else if (p.front().is_array()) {
      if (static_cast<int64_t>(p.size()) > limits.max_choices) {
        return field_error(
            "prompt", "at most " + std::to_string(limits.max_choices) + " prompts are allowed");
      }
      for (const auto& arr : p) {
        if (!arr.is_array() || arr.empty()) {
          return field_error("prompt", "a list of token-id prompts must hold non-empty lists");
        }
        LLMSERVE_ASSIGN_OR_RETURN(auto ids, ids_from_json(arr, limits.vocab_size));
        prompts.push_back(std::move(ids));
      }
    } else {
      return field_error("prompt", "expected a string, a list of strings, or a list of token ids");
    }
  } else {
    return field_error("prompt", "expected a string, a list of strings, or a list of token ids");
  }
  for (const auto& ids : prompts) {
    if (ids.empty()) return field_error("prompt", "must not be empty");
  }
  return prompts;
}

}  // namespace

Result<ParsedCompletion> parse_completion_request(std::string_view body_text,
                                                  const Tokenizer& tokenizer,
                                                  const RequestLimits& limits) {
  LLMSERVE_ASSIGN_OR_RETURN(json body, json_fields::parse_object(body_text));
  ParsedCompletion out;
  // Cheap checks first; tokenization last.
  if (present(body, "echo")) {
    const json& e = body.at("echo");
    if (!e.is_boolean()) return field_error("echo", "expected a boolean");
    out.echo = e.get<bool>();
  }
  if (present(body, "suffix")) {
    const json& s = body.at("suffix");
    if (!s.is_string()) return field_error("suffix", "expected a string");
    if (!s.get<std::string>().empty()) {
      return field_error("suffix", "suffix is not supported by this server");
    }
  }
  LLMSERVE_RETURN_IF_ERROR(parse_generation_fields(body, limits, &out.fields));
  if (present(body, "logprobs")) {
    const json& l = body.at("logprobs");
    if (l.is_boolean()) {
      return field_error("logprobs",
                         "expected an integer (the number of top logprobs) for completions");
    }
    LLMSERVE_RETURN_IF_ERROR(
        json_fields::read_int32(body, "logprobs", 0, limits.max_logprobs, &out.logprobs));
  }
  out.fields.params.logprobs = out.logprobs;
  SamplingParams& p = out.fields.params;
  if (out.echo && p.n > 1) {
    return field_error("echo", "echo with n > 1 is not supported (each prompt is echoed once)");
  }
  out.prompt_logprobs = p.prompt_logprobs;
  // echo with logprobs scores the prompt with the same top-N.
  if (out.echo && out.logprobs >= 0) p.prompt_logprobs = std::max(p.prompt_logprobs, out.logprobs);
  LLMSERVE_RETURN_IF_ERROR(require_completion(out.fields, out.echo || p.prompt_logprobs >= 0));
  // Reject an oversized prompt list before tokenizing anything.
  if (present(body, "prompt") && body.at("prompt").is_array() && !body.at("prompt").empty() &&
      !body.at("prompt").front().is_number()) {
    const int64_t choices = static_cast<int64_t>(body.at("prompt").size()) * out.fields.params.n;
    if (choices > limits.max_choices) {
      return field_error("n", "prompts x n = " + std::to_string(choices) +
                                  " exceeds the limit of " + std::to_string(limits.max_choices));
    }
  }
  LLMSERVE_ASSIGN_OR_RETURN(out.prompts, parse_prompts(body, tokenizer, limits));
  if (out.echo) {
    const json& pj = body.at("prompt");
    for (size_t i = 0; i < out.prompts.size(); ++i) {
      const json* s = pj.is_string() ? &pj : pj.at(i).is_string() ? &pj.at(i) : nullptr;
      out.echo_texts.push_back(s != nullptr ? s->get<std::string>()
                                            : tokenizer.decode(out.prompts[i]));
    }
  }
  size_t longest = 0;
  for (const auto& p : out.prompts) longest = std::max(longest, p.size());
  LLMSERVE_RETURN_IF_ERROR(fit_context(static_cast<int64_t>(longest), limits,
                                       limits.default_completion_max_tokens, &out.fields));
  return out;
}

}  // namespace llmserve
