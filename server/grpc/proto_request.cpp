#include "server/grpc/proto_request.h"

#include <cmath>
#include <optional>
#include <string>

#include "server/common/field_checks.h"
#include "server/common/structured_output.h"

namespace llmserve {

namespace {

// A set float field: must be finite (the range is validated later).
Status read_finite(const char* field, bool has, float value, float* out) {
  if (!has) return Status::ok();
  if (!std::isfinite(value)) return field_error(field, "must be a finite number");
  *out = value;
  return Status::ok();
}

Result<std::optional<GrammarSpec>> read_structured_outputs(const v1::GenerateRequest& req,
                                                           const RequestLimits& limits) {
  if (!req.has_structured_outputs()) return std::optional<GrammarSpec>();
  const v1::StructuredOutputs& so = req.structured_outputs();
  GrammarSpec spec;
  spec.field = "structured_outputs";
  switch (so.kind_case()) {
    case v1::StructuredOutputs::kJson: {
      spec.kind = GrammarKind::kJsonSchema;
      LLMSERVE_ASSIGN_OR_RETURN(
          spec.text, normalize_json_schema(so.json(), "structured_outputs.json", limits));
      break;
    }
    case v1::StructuredOutputs::kRegex:
      spec.kind = GrammarKind::kRegex;
      spec.text = so.regex();
      break;
    case v1::StructuredOutputs::kChoice:
      spec.kind = GrammarKind::kChoice;
      spec.choices.assign(so.choice().choices().begin(), so.choice().choices().end());
      break;
    case v1::StructuredOutputs::kGrammar:
      spec.kind = GrammarKind::kEbnf;
      spec.text = so.grammar();
      break;
    case v1::StructuredOutputs::kJsonObject:
      if (!so.json_object()) return field_error("structured_outputs.json_object", "expected true");
      spec.kind = GrammarKind::kJsonObject;
      break;
    case v1::StructuredOutputs::KIND_NOT_SET:
      return field_error("structured_outputs",
                         "give exactly one of json, regex, choice, grammar or json_object");
  }
  return std::optional(std::move(spec));
}

Status read_sampling(const v1::GenerateRequest& r, SamplingParams* p) {
  LLMSERVE_RETURN_IF_ERROR(
      read_finite("temperature", r.has_temperature(), r.temperature(), &p->temperature));
  LLMSERVE_RETURN_IF_ERROR(read_finite("top_p", r.has_top_p(), r.top_p(), &p->top_p));
  if (r.has_top_k()) p->top_k = r.top_k();
  LLMSERVE_RETURN_IF_ERROR(read_finite("min_p", r.has_min_p(), r.min_p(), &p->min_p));
  LLMSERVE_RETURN_IF_ERROR(read_finite("presence_penalty", r.has_presence_penalty(),
                                       r.presence_penalty(), &p->presence_penalty));
  LLMSERVE_RETURN_IF_ERROR(read_finite("frequency_penalty", r.has_frequency_penalty(),
                                       r.frequency_penalty(), &p->frequency_penalty));
  LLMSERVE_RETURN_IF_ERROR(read_finite("repetition_penalty", r.has_repetition_penalty(),
                                       r.repetition_penalty(), &p->repetition_penalty));
  for (const auto& [id, bias] : r.logit_bias()) {
    if (!std::isfinite(bias)) {
      return field_error("logit_bias",
                         "bias of token " + std::to_string(id) + " must be a finite number");
    }
    p->logit_bias[id] = bias;
  }
  if (r.has_seed()) p->seed = r.seed();
  p->stop.assign(r.stop().begin(), r.stop().end());
  p->stop_token_ids.assign(r.stop_token_ids().begin(), r.stop_token_ids().end());
  p->ignore_eos = r.ignore_eos();
  p->min_tokens = r.min_tokens();
  p->include_stop_str_in_output = r.include_stop_str_in_output();
  if (r.has_skip_special_tokens()) p->skip_special_tokens = r.skip_special_tokens();
  if (r.has_n()) p->n = r.n();
  return Status::ok();
}

}  // namespace

Result<GenerationRequest> parse_proto_request(const v1::GenerateRequest& r,
                                              const Tokenizer& tokenizer,
                                              const RequestLimits& limits,
                                              ReasoningParser reasoning) {
  if (!r.prompt().empty() && !r.prompt_token_ids().empty()) {
    return field_error("prompt", "set either prompt or prompt_token_ids, not both");
  }
  GenerationRequest out;
  out.model = r.model();
  if (!r.prompt_token_ids().empty()) {
    out.prompt_token_ids.emplace_back(r.prompt_token_ids().begin(), r.prompt_token_ids().end());
  } else {
    out.prompt_texts.push_back(r.prompt());
  }
  if (r.has_max_tokens()) {
    out.max_tokens_given = true;
    out.params.max_tokens = r.max_tokens();
  }
  limits.default_sampling.apply(&out.params);  // the model's defaults; the request's own win
  LLMSERVE_RETURN_IF_ERROR(read_sampling(r, &out.params));
  if (r.has_logprobs()) out.logprobs = r.logprobs();
  if (r.has_prompt_logprobs()) out.prompt_logprobs = r.prompt_logprobs();
  out.priority = r.priority();
  LLMSERVE_ASSIGN_OR_RETURN(out.grammar, read_structured_outputs(r, limits));
  LLMSERVE_RETURN_IF_ERROR(validate_generation_request(limits, &out));
  if (r.has_thinking_token_budget()) {
    if (r.thinking_token_budget() < -1) {
      return field_error("thinking_token_budget", "must be -1 (no budget) or >= 0, got " +
                                                      std::to_string(r.thinking_token_budget()));
    }
    out.reasoning_budget = r.thinking_token_budget();
  }
  LLMSERVE_RETURN_IF_ERROR(prepare_prompts(tokenizer, limits, PromptStyle::kCompletion, &out));
  if (out.reasoning_budget >= 0 && reasoning != ReasoningParser::kNone) {
    // Where the reply starts, from the prompt's text as the model sees it (the ids decoded).
    const std::string text =
        out.prompt_texts.empty() ? tokenizer.decode(out.prompt_token_ids[0]) : out.prompt_texts[0];
    out.reasoning =
        reasoning_start(reasoning, text, /*grammar_without_block=*/out.grammar.has_value());
  }
  return out;
}

}  // namespace llmserve
