// vLLM's token-in routes for routers and evaluation harnesses:
//   POST /v1/completions/render, POST /v1/chat/completions/render: the request as the engine
//     would run it, without running it (vLLM's GenerateRequest: token_ids, sampling_params, ...);
//     a completion gives a list (one per prompt), a chat one object. The same parsers as the
//     generation routes, so the tokens are exactly those a generation would compute.
//   GET /tokenizer_info: the tokenizer's configuration (special tokens and their ids, the chat
//     template, the model's context length), which lm-eval's remote tokenizer reads.
#include <charconv>
#include <cstdlib>
#include <string>

#include "engine/tokenizer/tokenizer.h"
#include "server/http/chat_request.h"
#include "server/http/completion_request.h"
#include "server/http/http_context.h"
#include "server/http/openai_response.h"

namespace llmserve {

namespace {

using nlohmann::json;

// The float as the shortest decimal that reads back to it (0.3f is 0.3, not 0.30000001192...).
double shortest(float v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf) - 1, v);
  if (ec != std::errc()) return v;
  *end = '\0';
  return std::strtod(buf, nullptr);
}

json sampling_params_json(const GenerationRequest& r) {
  const SamplingParams& p = r.params;
  json stop_ids = json::array();
  for (int32_t id : p.stop_token_ids) stop_ids.push_back(id);
  json bias = nullptr;
  if (!p.logit_bias.empty()) {
    bias = json::object();
    for (const auto& [id, b] : p.logit_bias) bias[std::to_string(id)] = shortest(b);
  }
  return {{"n", p.n},
          {"presence_penalty", shortest(p.presence_penalty)},
          {"frequency_penalty", shortest(p.frequency_penalty)},
          {"repetition_penalty", shortest(p.repetition_penalty)},
          {"temperature", shortest(p.temperature)},
          {"top_p", shortest(p.top_p)},
          {"top_k", p.top_k == 0 ? -1 : p.top_k},
          {"min_p", shortest(p.min_p)},
          {"seed", p.seed ? json(*p.seed) : json(nullptr)},
          {"stop", p.stop},
          {"stop_token_ids", stop_ids},
          {"ignore_eos", p.ignore_eos},
          {"max_tokens", p.max_tokens},
          {"min_tokens", p.min_tokens},
          {"logprobs", r.logprobs ? json(*r.logprobs) : json(nullptr)},
          {"prompt_logprobs", r.prompt_logprobs ? json(*r.prompt_logprobs) : json(nullptr)},
          {"skip_special_tokens", p.skip_special_tokens},
          {"include_stop_str_in_output", p.include_stop_str_in_output},
          {"logit_bias", bias}};
}

json generate_request_json(const GenerationRequest& r, size_t prompt, const std::string& id,
                           const std::string& model) {
  return {{"request_id", id},
          {"token_ids", r.prompt_token_ids[prompt]},
          {"features", nullptr},
          {"sampling_params", sampling_params_json(r)},
          {"model", model},
          {"stream", r.stream},
          {"stream_options", r.stream ? json{{"include_usage", r.include_usage}} : json(nullptr)},
          {"cache_salt", r.cache_salt.empty() ? json(nullptr) : json(r.cache_salt)},
          {"priority", r.priority}};
}

void handle_render(HttpContext& ctx, ApiKind kind, const httplib::Request& req,
                   httplib::Response& res) {
  const int retry = ctx.state.options().retry_after_seconds;
  Engine* engine = ctx.state.engine();
  if (engine == nullptr) return send_status_error(res, unavailable("no model loaded"), retry);
  const RequestLimits limits = ctx.limits();
  auto parsed = kind == ApiKind::kCompletion
                    ? parse_completion_request(req.body, engine->tokenizer(), limits)
                    : parse_chat_request(req.body, engine->tokenizer(), ctx.chat_renderer, limits);
  if (!parsed.is_ok()) return send_status_error(res, parsed.status(), retry);
  const GenerationRequest& r = *parsed;
  const std::string model = r.model.empty() ? ctx.state.model_name() : r.model;
  const std::string id = request_id_of(res);
  if (kind == ApiKind::kChat) {
    return send_json(res, 200, generate_request_json(r, 0, "chatcmpl-" + id, model));
  }
  json list = json::array();
  for (size_t i = 0; i < r.prompt_token_ids.size(); ++i) {
    const std::string suffix = r.prompt_token_ids.size() > 1 ? "-" + std::to_string(i) : "";
    list.push_back(generate_request_json(r, i, "cmpl-" + id + suffix, model));
  }
  send_json(res, 200, list);
}

// A special token's text and id, or nulls when the model has none.
void put_token(json& out, const Tokenizer& tok, const char* name, int32_t id) {
  const bool has = id >= 0 && id < tok.vocab_size();
  out[std::string(name) + "_token"] = has ? json(tok.token_text(id)) : json(nullptr);
  out[std::string(name) + "_token_id"] = has ? json(id) : json(nullptr);
}

void handle_tokenizer_info(HttpContext& ctx, httplib::Response& res) {
  Engine* engine = ctx.state.engine();
  if (engine == nullptr) {
    return send_status_error(res, unavailable("no model loaded"),
                             ctx.state.options().retry_after_seconds);
  }
  const Tokenizer& tok = engine->tokenizer();
  const TokenizerSpec& spec = tok.spec();
  json out = {{"tokenizer_class", "PreTrainedTokenizerFast"},
              {"model_max_length", engine->max_model_len()},
              {"vocab_size", tok.vocab_size()},
              {"add_bos_token", spec.add_bos},
              {"add_eos_token", spec.add_eos}};
  put_token(out, tok, "bos", spec.bos_id);
  put_token(out, tok, "eos", spec.eos_id);
  put_token(out, tok, "pad", spec.pad_id);
  put_token(out, tok, "unk", spec.unk_id);
  const std::string& override_template = engine->options().chat_template_override;
  const std::string& chat_template =
      override_template.empty() ? spec.chat_template : override_template;
  out["chat_template"] = chat_template.empty() ? json(nullptr) : json(chat_template);
  send_json(res, 200, out);
}

}  // namespace

void register_render_routes(httplib::Server& server, HttpContext& ctx) {
  server.Post("/v1/completions/render",
              [&ctx](const httplib::Request& req, httplib::Response& res) {
                handle_render(ctx, ApiKind::kCompletion, req, res);
              });
  server.Post("/v1/chat/completions/render",
              [&ctx](const httplib::Request& req, httplib::Response& res) {
                handle_render(ctx, ApiKind::kChat, req, res);
              });
  server.Get("/tokenizer_info", [&ctx](const httplib::Request&, httplib::Response& res) {
    handle_tokenizer_info(ctx, res);
  });
}

}  // namespace llmserve
