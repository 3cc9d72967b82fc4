#include "server/embeddings/embeddings_routes.h"

#include <openssl/evp.h>

#include <chrono>
#include <cstring>

#include "server/common/embedding_job.h"
#include "server/common/field_checks.h"
#include "server/embeddings/embeddings_request.h"
#include "server/http/http_context.h"
#include "server/http/json_fields.h"

namespace llmserve {
namespace {

using json = nlohmann::json;

// An input past the context names `input` (OpenAI's param for it here), not chat's `messages`.
Status about_input(const Status& s) {
  if (s.code() != StatusCode::kOutOfRange || !param_from_message(s.message()).empty()) return s;
  return out_of_range("input: " + s.message());
}

constexpr size_t kMaxInputs = 2048;  // OpenAI's limit on inputs per request

std::string base64_of(const std::vector<float>& v) {
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // x86: little-endian already
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::chrono::milliseconds timeout_of(const HttpContext& ctx, const httplib::Request& req,
                                     const json& body, Status* st) {
  std::optional<double> body_timeout;
  double t = 0;
  if (json_fields::present(body, "timeout")) {
    *st = json_fields::read_number(body, "timeout", 0, 1e9, &t, /*lo_open=*/true);
    if (!st->is_ok()) return {};
    body_timeout = t;
  }
  auto deadline = request_deadline(req, body_timeout, ctx.state.options().request_timeout_seconds);
  if (!deadline.is_ok()) {
    *st = deadline.status();
    return {};
  }
  if (!deadline->has_value()) return std::chrono::milliseconds(0);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      **deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

void handle_embeddings(HttpContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const int retry = ctx.state.options().retry_after_seconds;
  Engine* engine = ctx.state.engine();
  if (engine == nullptr) return send_status_error(res, unavailable("no model loaded"), retry);
  auto body = json_fields::parse_object(req.body, ctx.state.options().json_bounds);
  if (!body.is_ok()) return send_status_error(res, body.status(), retry);
  std::string model;
  Status st = json_fields::read_string(*body, "model", &model);
  if (st.is_ok()) st = check_model_name(model, ctx.state.model_name());
  if (!st.is_ok()) return send_status_error(res, st, retry);
  auto parsed = read_embeddings_request(*body, *engine, kMaxInputs);
  if (!parsed.is_ok()) return send_status_error(res, parsed.status(), retry);
  const auto timeout = timeout_of(ctx, req, *body, &st);
  if (!st.is_ok()) return send_status_error(res, st, retry);
  auto result = run_embeddings(*engine, std::move(parsed->inputs), parsed->dimensions,
                               request_id_of(res), timeout);
  if (!result.is_ok()) return send_status_error(res, about_input(result.status()), retry);
  json data = json::array();
  for (size_t i = 0; i < result->vectors.size(); ++i) {
    json item = {{"object", "embedding"}, {"index", i}};
    if (parsed->base64) {
      item["embedding"] = base64_of(result->vectors[i]);
    } else {
      item["embedding"] = result->vectors[i];
    }
    data.push_back(std::move(item));
  }
  send_json(
      res, 200,
      {{"object", "list"},
       {"data", std::move(data)},
       {"model", ctx.state.model_name()},
       {"usage",
        {{"prompt_tokens", result->prompt_tokens}, {"total_tokens", result->prompt_tokens}}}});
}

}  // namespace

HttpApi embeddings_api() {
  HttpApi api;
  api.add_routes = [](httplib::Server& server, HttpContext& ctx) {
    server.Post("/v1/embeddings", [&ctx](const httplib::Request& req, httplib::Response& res) {
      handle_embeddings(ctx, req, res);
    });
  };
  return api;
}

}  // namespace llmserve
