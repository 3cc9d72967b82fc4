// Short routes: models, tokenize / detokenize, version, health, ready, metrics, cancel by id.
#include <chrono>

#include "server/common/field_checks.h"
#include "server/common/version.h"
#include "server/http/http_context.h"
#include "server/http/json_fields.h"

namespace llmserve {

namespace {

using nlohmann::json;

void handle_tokenize(HttpContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const int retry = ctx.state.options().retry_after_seconds;
  auto body = json_fields::parse_object(req.body, ctx.state.options().json_bounds);
  if (!body.is_ok()) return send_status_error(res, body.status(), retry);
  const Engine& engine = *ctx.state.engine();
  std::string model;
  Status st = json_fields::read_string(*body, "model", &model);
  if (!st.is_ok()) return send_status_error(res, st, retry);
  st = check_model_name(model, ctx.state.model_name());
  if (!st.is_ok()) return send_status_error(res, st, retry);
  bool add_special = true;
  st = json_fields::read_bool(*body, "add_special_tokens", &add_special);
  if (!st.is_ok()) return send_status_error(res, st, retry);
  bool want_strs = false;
  st = json_fields::read_bool(*body, "return_token_strs", &want_strs);
  if (!st.is_ok()) return send_status_error(res, st, retry);
  std::vector<int32_t> ids;
  if (json_fields::present(*body, "messages")) {
    auto messages = normalize_chat_messages(body->at("messages"), ctx.state.options().json_bounds);
    if (!messages.is_ok()) return send_status_error(res, messages.status(), retry);
    auto mode = read_chat_prompt_mode(*body, *messages);
    if (!mode.is_ok()) return send_status_error(res, mode.status(), retry);
    if (!ctx.chat_renderer) {
      return send_status_error(res, invalid_argument("this model has no chat template"), retry);
    }
    auto text = render_chat_prompt(ctx.chat_renderer, *messages, *mode);
    if (!text.is_ok()) return send_status_error(res, text.status(), retry);
    ids = engine.tokenizer().encode(*text, /*add_special=*/false, /*parse_special=*/true);
  } else {
    std::string prompt;
    const char* key = json_fields::present(*body, "prompt") ? "prompt" : "text";
    if (!json_fields::present(*body, key)) {
      return send_status_error(res, json_fields::field_error("prompt", "is required (or messages)"),
                               retry);
    }
    st = json_fields::read_string(*body, key, &prompt);
    if (!st.is_ok()) return send_status_error(res, st, retry);
    ids = engine.tokenizer().encode(prompt, add_special, /*parse_special=*/true);
  }
  json out = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", engine.max_model_len()}};
  if (want_strs) {
    json strs = json::array();
    for (int32_t id : ids) strs.push_back(engine.tokenizer().token_text(id));
    out["token_strs"] = std::move(strs);
  }
  send_json(res, 200, out);
}

void handle_detokenize(HttpContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const int retry = ctx.state.options().retry_after_seconds;
  auto body = json_fields::parse_object(req.body, ctx.state.options().json_bounds);
  if (!body.is_ok()) return send_status_error(res, body.status(), retry);
  const Engine& engine = *ctx.state.engine();
  if (!json_fields::present(*body, "tokens") || !body->at("tokens").is_array()) {
    return send_status_error(
        res, json_fields::field_error("tokens", "expected a list of token ids"), retry);
  }
  std::vector<int32_t> ids;
  const int32_t vocab = engine.tokenizer().vocab_size();
  for (const auto& x : body->at("tokens")) {
    auto id = json_fields::integer_value(x, "tokens");
    if (!id.is_ok() || *id < 0 || *id >= vocab) {
      return send_status_error(
          res,
          json_fields::field_error(
              "tokens", "token ids must be integers in [0, " + std::to_string(vocab) + ")"),
          retry);
    }
    ids.push_back(static_cast<int32_t>(*id));
  }
  bool skip_special = false;
  Status st = json_fields::read_bool(*body, "skip_special_tokens", &skip_special);
  if (!st.is_ok()) return send_status_error(res, st, retry);
  send_json(res, 200, {{"prompt", engine.tokenizer().decode(ids, skip_special)}});
}

// The served model as OpenAI's Model object, with vLLM's max_model_len and the sampling defaults.
json model_object(HttpContext& ctx) {
  Engine* e = ctx.state.engine();
  json model = {{"id", ctx.state.model_name()},
                {"object", "model"},
                {"created", static_cast<int64_t>(ctx.metrics.start_time_seconds())},
                {"owned_by", "llmserve"},
                {"max_model_len", e ? e->max_model_len() : 0},
                {"default_sampling_params", json::object()}};
  // What a request that omits these fields samples with (the model's generation defaults).
  for (const auto& [key, value] : ctx.state.options().default_sampling.items()) {
    model["default_sampling_params"][key] =
        key == "top_k" ? json(static_cast<int64_t>(value)) : json(value);
  }
  return model;
}

// GET /v1/models/{model}: the model object for the served id, else OpenAI's 404
// (param "model", code "model_not_found").
void handle_retrieve_model(HttpContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches.size() > 1 ? req.matches[1].str() : "";
  if (id != ctx.state.model_name()) {
    return send_status_error(
        res,
        not_found("model: The model '" + id + "' does not exist; this server serves '" +
                  ctx.state.model_name() + "'"),
        ctx.state.options().retry_after_seconds);
  }
  send_json(res, 200, model_object(ctx));
}

void handle_cancel(HttpContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches.size() > 1 ? req.matches[1].str() : "";
  bool found = ctx.state.active().cancel(id);
  if (!found && ctx.state.engine() != nullptr) found = ctx.state.engine()->abort_external(id);
  if (!found) return send_error(res, not_found_error("no running request with id '" + id + "'"));
  send_json(res, 200, {{"id", id}, {"object", "request.cancelled"}, {"cancelled", true}});
}

}  // namespace

void register_info_routes(httplib::Server& server, HttpContext& ctx) {
  server.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"status", "ok"}});
  });
  server.Get("/ready", [&ctx](const httplib::Request&, httplib::Response& res) {
    std::string why;
    if (ctx.state.ready(&why)) return send_json(res, 200, {{"status", "ready"}});
    send_status_error(res, unavailable("not ready: " + why),
                      ctx.state.options().retry_after_seconds);
  });
  server.Get("/version", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"version", kLlmserveVersion}});
  });
  server.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    Engine* e = ctx.state.engine();
    const EngineStats stats = e ? e->stats() : EngineStats{};
    res.status = 200;
    res.set_content(ctx.metrics.render(stats, e ? &e->metrics() : nullptr),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"object", "list"}, {"data", json::array({model_object(ctx)})}});
  });
  // Served model ids may hold '/' (org/name).
  server.Get(R"(/v1/models/(.+))", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_retrieve_model(ctx, req, res);
  });
  server.Post("/tokenize", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_tokenize(ctx, req, res);
  });
  server.Post("/detokenize", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_detokenize(ctx, req, res);
  });
  server.Delete(R"(/v1/requests/([^/]+))",
                [&ctx](const httplib::Request& req, httplib::Response& res) {
                  handle_cancel(ctx, req, res);
                });
  server.Post(R"(/v1/requests/([^/]+)/cancel)",
              [&ctx](const httplib::Request& req, httplib::Response& res) {
                handle_cancel(ctx, req, res);
              });
}

}  // namespace llmserve
