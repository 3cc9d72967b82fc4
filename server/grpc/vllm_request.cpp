#include "server/grpc/vllm_request.h"

#include <cmath>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "server/common/bounded_json.h"
#include "server/common/field_checks.h"
#include "server/common/kv_transfer_params.h"
#include "server/common/structured_output.h"

namespace llmserve {

namespace {

namespace vpb = ::vllm::grpc::engine;

constexpr uint32_t kMaxInt = static_cast<uint32_t>(std::numeric_limits<int32_t>::max());

// A float that is "unset" at 0 (proto3): finite when set.
Status read_nonzero(const char* field, float value, float* out) {
  if (value == 0.0f) return Status::ok();
  if (!std::isfinite(value)) return field_error(field, "must be a finite number");
  *out = value;
  return Status::ok();
}

// xgrammar's structural tag as its compiler takes it: {"type": "structural_tag", "format": ...}.
// The older form, {"structures": [{"begin", "schema", "end"}], "triggers": [...]}, becomes the
// same triggered tags (as xgrammar's own Python layer converts it).
Result<std::string> structural_tag_text(nlohmann::json doc) {
  if (doc.contains("format") || !doc.contains("structures")) return doc.dump();
  const char* field = "sampling_params.structural_tag";
  const auto& structures = doc["structures"];
  const auto triggers = doc.value("triggers", nlohmann::json::array());
  if (!structures.is_array() || !triggers.is_array()) {
    return field_error(field, "'structures' and 'triggers' must be lists");
  }
  nlohmann::json tags = nlohmann::json::array();
  for (const auto& st : structures) {
    if (!st.is_object() || !st.contains("begin") || !st.contains("end") || !st.contains("schema")) {
      return field_error(field, "each structure needs 'begin', 'schema' and 'end'");
    }
    tags.push_back({{"type", "tag"},
                    {"begin", st["begin"]},
                    {"content", {{"type", "json_schema"}, {"json_schema", st["schema"]}}},
                    {"end", st["end"]}});
  }
  nlohmann::json out = {
      {"type", "structural_tag"},
      {"format", {{"type", "triggered_tags"}, {"triggers", triggers}, {"tags", tags}}}};
  return out.dump();
}

Result<std::optional<GrammarSpec>> read_constraint(const vpb::SamplingParams& s,
                                                   const RequestLimits& limits) {
  GrammarSpec spec;
  switch (s.constraint_case()) {
    case vpb::SamplingParams::CONSTRAINT_NOT_SET:
      return std::optional<GrammarSpec>();
    case vpb::SamplingParams::kJsonSchema: {
      spec.kind = GrammarKind::kJsonSchema;
      spec.field = "sampling_params.json_schema";
      LLMSERVE_ASSIGN_OR_RETURN(spec.text,
                                normalize_json_schema(s.json_schema(), spec.field, limits));
      break;
    }
    case vpb::SamplingParams::kRegex:
      spec.kind = GrammarKind::kRegex;
      spec.field = "sampling_params.regex";
      spec.text = s.regex();
      break;
    case vpb::SamplingParams::kGrammar:
      spec.kind = GrammarKind::kEbnf;
      spec.field = "sampling_params.grammar";
      spec.text = s.grammar();
      break;
    case vpb::SamplingParams::kStructuralTag: {
      spec.kind = GrammarKind::kStructuralTag;
      spec.field = "sampling_params.structural_tag";
      if (static_cast<int64_t>(s.structural_tag().size()) > limits.max_grammar_bytes) {
        return field_error(spec.field,
                           "longer than " + std::to_string(limits.max_grammar_bytes) + " bytes");
      }
      LLMSERVE_ASSIGN_OR_RETURN(
          std::optional<nlohmann::json> doc,
          parse_bounded_json_if_valid(s.structural_tag(), limits.json_bounds, spec.field));
      if (!doc || !doc->is_object()) {
        return field_error(spec.field, "expected a JSON object (xgrammar's structural tag)");
      }
      LLMSERVE_ASSIGN_OR_RETURN(spec.text, structural_tag_text(std::move(*doc)));
      break;
    }
    case vpb::SamplingParams::kJsonObject:
      if (!s.json_object()) return field_error("sampling_params.json_object", "expected true");
      spec.kind = GrammarKind::kJsonObject;
      spec.field = "sampling_params.json_object";
      break;
    case vpb::SamplingParams::kChoice:
      spec.kind = GrammarKind::kChoice;
      spec.field = "sampling_params.choice";
      spec.choices.assign(s.choice().choices().begin(), s.choice().choices().end());
      break;
  }
  return std::optional(std::move(spec));
}

Status read_sampling(const vpb::SamplingParams& s, GenerationRequest* out) {
  SamplingParams& p = out->params;
  if (s.has_temperature()) {
    if (!std::isfinite(s.temperature())) {
      return field_error("sampling_params.temperature", "must be a finite number");
    }
    p.temperature = s.temperature();
  }
  LLMSERVE_RETURN_IF_ERROR(read_nonzero("sampling_params.top_p", s.top_p(), &p.top_p));
  if (s.top_k() != 0) {
    if (s.top_k() > kMaxInt) return field_error("sampling_params.top_k", "too large");
    p.top_k = static_cast<int32_t>(s.top_k());
  }
  LLMSERVE_RETURN_IF_ERROR(read_nonzero("sampling_params.min_p", s.min_p(), &p.min_p));
  LLMSERVE_RETURN_IF_ERROR(read_nonzero("sampling_params.frequency_penalty", s.frequency_penalty(),
                                        &p.frequency_penalty));
  LLMSERVE_RETURN_IF_ERROR(
      read_nonzero("sampling_params.presence_penalty", s.presence_penalty(), &p.presence_penalty));
  LLMSERVE_RETURN_IF_ERROR(read_nonzero("sampling_params.repetition_penalty",
                                        s.repetition_penalty(), &p.repetition_penalty));
  if (s.has_max_tokens()) {
    if (s.max_tokens() > kMaxInt) {
      return field_error("sampling_params.max_tokens",
                         "must be at most " + std::to_string(kMaxInt));
    }
    out->max_tokens_given = true;
    p.max_tokens = static_cast<int32_t>(s.max_tokens());
  }
  if (s.min_tokens() > kMaxInt) return field_error("sampling_params.min_tokens", "too large");
  p.min_tokens = static_cast<int32_t>(s.min_tokens());
  p.stop.assign(s.stop().begin(), s.stop().end());
  for (uint32_t id : s.stop_token_ids()) {
    if (id > kMaxInt) {
      return field_error("sampling_params.stop_token_ids",
                         std::to_string(id) + " is not a token id");
    }
    p.stop_token_ids.push_back(static_cast<int32_t>(id));
  }
  p.skip_special_tokens = s.skip_special_tokens();
  p.ignore_eos = s.ignore_eos();
  if (s.n() != 0) {
    if (s.n() > kMaxInt) return field_error("sampling_params.n", "too large");
    p.n = static_cast<int32_t>(s.n());
  }
  if (s.has_logprobs()) {
    if (s.logprobs() < 0) {
      return field_error("sampling_params.logprobs",
                         "must be in [0, max_logprobs]; -1 (the whole vocabulary) is not offered");
    }
    out->logprobs = s.logprobs();
  }
  if (s.has_prompt_logprobs()) {
    if (s.prompt_logprobs() < 0) {
      return field_error("sampling_params.prompt_logprobs",
                         "must be in [0, max_logprobs]; -1 (the whole vocabulary) is not offered");
    }
    out->prompt_logprobs = s.prompt_logprobs();
  }
  if (s.has_seed()) p.seed = static_cast<uint64_t>(static_cast<int64_t>(s.seed()));
  p.include_stop_str_in_output = s.include_stop_str_in_output();
  for (const auto& [id, bias] : s.logit_bias()) {
    if (!std::isfinite(bias)) {
      return field_error("sampling_params.logit_bias",
                         "bias of token " + std::to_string(id) + " must be a finite number");
    }
    p.logit_bias[id] = bias;
  }
  return Status::ok();
}

// The prompt's token ids: given, or the text tokenized as a completion prompt would be.
Result<std::vector<int32_t>> read_prompt(const vpb::GenerateRequest& r, const Tokenizer& tokenizer,
                                         int32_t vocab_size) {
  std::vector<int32_t> ids;
  if (r.has_tokenized()) {
    ids.reserve(static_cast<size_t>(r.tokenized().input_ids_size()));
    for (uint32_t id : r.tokenized().input_ids()) {
      if (id >= static_cast<uint32_t>(vocab_size)) {
        return field_error("tokenized.input_ids", std::to_string(id) +
                                                      " is out of the vocabulary [0, " +
                                                      std::to_string(vocab_size) + ")");
      }
      ids.push_back(static_cast<int32_t>(id));
    }
    if (ids.empty()) return field_error("tokenized.input_ids", "must not be empty");
    return ids;
  }
  ids = tokenizer.encode(r.text());
  if (ids.empty()) return field_error("text", "must not be empty");
  return ids;
}

Status check_unsupported(const vpb::GenerateRequest& r) {
  if (r.has_mm_inputs() || r.extra_mm_inputs_size() > 0) {
    return field_error(r.has_mm_inputs() ? "mm_inputs" : "extra_mm_inputs",
                       "this worker serves a text-only model");
  }
  if (r.has_media_refs()) return field_error("media_refs", "this worker serves a text-only model");
  if (r.has_data_parallel_rank() && r.data_parallel_rank() != 0) {
    return field_error("data_parallel_rank", "this worker has one rank (0), got " +
                                                 std::to_string(r.data_parallel_rank()));
  }
  if (r.input_case() == vpb::GenerateRequest::INPUT_NOT_SET) {
    return field_error("tokenized", "give the prompt as tokenized.input_ids (or text)");
  }
  return Status::ok();
}

}  // namespace

Result<GenerationRequest> parse_vllm_request(const vpb::GenerateRequest& r,
                                             const Tokenizer& tokenizer,
                                             const RequestLimits& limits) {
  LLMSERVE_RETURN_IF_ERROR(check_unsupported(r));
  GenerationRequest out;
  out.stream = r.stream();
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<int32_t> prompt,
                            read_prompt(r, tokenizer, limits.vocab_size));
  const vpb::SamplingParams& s = r.sampling_params();
  if (s.has_truncate_prompt_tokens()) {
    const int32_t keep = s.truncate_prompt_tokens();
    if (keep == 0 || keep < -1) {
      return field_error("sampling_params.truncate_prompt_tokens",
                         "must be -1 (the context) or at least 1, got " + std::to_string(keep));
    }
    const size_t k = static_cast<size_t>(keep == -1 ? limits.max_model_len : keep);
    if (prompt.size() > k) prompt.erase(prompt.begin(), prompt.end() - static_cast<ptrdiff_t>(k));
  }
  out.prompt_token_ids.push_back(std::move(prompt));
  limits.default_sampling.apply(&out.params);  // the model's defaults; the request's own win
  LLMSERVE_RETURN_IF_ERROR(read_sampling(s, &out));
  if (r.has_kv_transfer_params_json()) {
    LLMSERVE_ASSIGN_OR_RETURN(
        std::optional<nlohmann::json> doc,
        parse_bounded_json_if_valid(r.kv_transfer_params_json(), limits.json_bounds,
                                    "kv_transfer_params_json"));
    if (!doc || !doc->is_object()) {
      return field_error("kv_transfer_params_json", "expected a JSON object");
    }
    LLMSERVE_ASSIGN_OR_RETURN(out.kv_transfer,
                              parse_kv_transfer_params(*doc, "kv_transfer_params_json"));
  }
  LLMSERVE_ASSIGN_OR_RETURN(out.grammar, read_constraint(s, limits));
  LLMSERVE_RETURN_IF_ERROR(validate_generation_request(limits, &out));
  RequestLimits room = limits;
  room.default_completion_max_tokens = 0;  // unset max_tokens: the room left in the context
  LLMSERVE_RETURN_IF_ERROR(prepare_prompts(tokenizer, room, PromptStyle::kCompletion, &out));
  return out;
}

}  // namespace llmserve
