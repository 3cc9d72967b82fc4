#include "server/embeddings/rerank_routes.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/pooling/pooler.h"
#include "engine/pooling/rerank_prompt.h"
#include "server/common/embedding_job.h"
#include "server/common/field_checks.h"
#include "server/embeddings/embeddings_request.h"
#include "server/http/http_context.h"
#include "server/http/json_fields.h"

namespace llmserve {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxDocuments = 1024;

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

// A string, or (documents) {"text": string}.
Result<std::string> text_of(const json& v, const char* field) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("text") && v["text"].is_string()) {
    return v["text"].get<std::string>();
  }
  return field_error(field, "items must be strings (or objects with a string \"text\")");
}

Result<std::vector<std::string>> texts_of(const json& body, const char* field, bool allow_one) {
  if (!json_fields::present(body, field)) return field_error(field, "is required");
  const json& v = body.at(field);
  std::vector<std::string> out;
  if (allow_one && v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    if (v.empty()) return field_error(field, "must not be an empty list");
    if (v.size() > kMaxDocuments) {
      return field_error(field, "at most " + std::to_string(kMaxDocuments) + " items");
    }
    for (const json& item : v) {
      LLMSERVE_ASSIGN_OR_RETURN(std::string t, text_of(item, field));
      out.push_back(std::move(t));
    }
  } else {
    return field_error(
        field, allow_one ? "must be a string or a list of strings" : "must be a list of strings");
  }
  for (const std::string& t : out) {
    if (t.empty()) return field_error(field, "texts must not be empty");
  }
  return out;
}

// Embeds `texts` (tokenized as /v1/embeddings does, no prompt) in one batch.
Result<EmbeddingResult> embed_texts(Engine& engine, const std::vector<std::string>& texts,
                                    const std::string& id, const char* field) {
  std::vector<std::vector<int32_t>> inputs;
  for (const std::string& t : texts) {
    auto ids = tokenize_for_pooling(engine, t, "");
    if (!ids.is_ok()) return field_error(field, ids.status().message());
    inputs.push_back(std::move(ids).value());
  }
  return run_embeddings(engine, std::move(inputs), 0, id, std::chrono::milliseconds(0));
}

struct Scores {
  std::vector<double> values;  // one per pair
  int64_t prompt_tokens = 0;
};

// The score of each pair (first[0 or i], second[i]), all in one batch: a reranker's P("yes") of
// the pair's prompt (rerank_prompt.h), else the cosine of the two texts' embeddings.
Result<Scores> score_pairs(Engine& engine, const std::vector<std::string>& first,
                           const std::vector<std::string>& second, const std::string& instruction,
                           const std::string& id, const char* field) {
  Scores out;
  const auto first_of = [&](size_t i) -> const std::string& {
    return first.size() == 1 ? first[0] : first[i];
  };
  if (engine.pooler() != nullptr && engine.pooler()->is_reranker()) {
    std::vector<std::vector<int32_t>> prompts;
    for (size_t i = 0; i < second.size(); ++i) {
      prompts.push_back(rerank_prompt_ids(engine.tokenizer(), first_of(i), second[i], instruction));
    }
    LLMSERVE_ASSIGN_OR_RETURN(EmbeddingResult r,
                              run_embeddings(engine, std::move(prompts), 0, id,
                                             std::chrono::milliseconds(0), PoolingUse::kScore));
    for (const std::vector<float>& v : r.vectors) out.values.push_back(v.empty() ? 0.0 : v[0]);
    out.prompt_tokens = r.prompt_tokens;
    return out;
  }
  if (!instruction.empty()) {
    return field_error("instruction", "only a reranker takes an instruction; this model embeds");
  }
  std::vector<std::string> texts = first;
  texts.insert(texts.end(), second.begin(), second.end());
  LLMSERVE_ASSIGN_OR_RETURN(EmbeddingResult r, embed_texts(engine, texts, id, field));
  const size_t n1 = first.size();
  for (size_t i = 0; i < second.size(); ++i) {
    out.values.push_back(cosine(r.vectors[n1 == 1 ? 0 : i], r.vectors[n1 + i]));
  }
  out.prompt_tokens = r.prompt_tokens;
  return out;
}

struct Prepared {
  Engine* engine = nullptr;
  json body;
};

Result<Prepared> prepare(HttpContext& ctx, const httplib::Request& req) {
  Engine* engine = ctx.state.engine();
  if (engine == nullptr) return unavailable("no model loaded");
  LLMSERVE_ASSIGN_OR_RETURN(json body,
                            json_fields::parse_object(req.body, ctx.state.options().json_bounds));
  std::string model;
  LLMSERVE_RETURN_IF_ERROR(json_fields::read_string(body, "model", &model));
  LLMSERVE_RETURN_IF_ERROR(check_model_name(model, ctx.state.model_name()));
  return Prepared{engine, std::move(body)};
}

void handle_rerank(HttpContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const int retry = ctx.state.options().retry_after_seconds;
  auto p = prepare(ctx, req);
  if (!p.is_ok()) return send_status_error(res, p.status(), retry);
  const json& body = p->body;
  std::string query;
  if (!json_fields::present(body, "query")) {
    return send_status_error(res, field_error("query", "is required"), retry);
  }
  Status st = json_fields::read_string(body, "query", &query);
  if (st.is_ok() && query.empty()) st = field_error("query", "must not be empty");
  if (!st.is_ok()) return send_status_error(res, st, retry);
  auto docs = texts_of(body, "documents", /*allow_one=*/false);
  if (!docs.is_ok()) return send_status_error(res, docs.status(), retry);
  int32_t top_n = 0;
  st = json_fields::read_int32(body, "top_n", 0, INT32_MAX, &top_n);
  bool return_documents = true;
  if (st.is_ok()) st = json_fields::read_bool(body, "return_documents", &return_documents);
  std::string instruction;
  if (st.is_ok()) st = json_fields::read_string(body, "instruction", &instruction);
  if (!st.is_ok()) return send_status_error(res, st, retry);

  const std::string id = request_id_of(res);
  auto r = score_pairs(*p->engine, {query}, *docs, instruction, id, "documents");
  if (!r.is_ok()) return send_status_error(res, r.status(), retry);
  const std::vector<double>& scores = r->values;
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (top_n > 0 && static_cast<size_t>(top_n) < order.size())
    order.resize(static_cast<size_t>(top_n));
  json results = json::array();
  for (size_t i : order) {
    json item = {{"index", i}, {"relevance_score", scores[i]}};
    if (return_documents) item["document"] = {{"text", (*docs)[i]}};
    results.push_back(std::move(item));
  }
  send_json(res, 200,
            {{"id", id},
             {"model", ctx.state.model_name()},
             {"results", std::move(results)},
             {"usage", {{"total_tokens", r->prompt_tokens}}}});
}

void handle_score(HttpContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const int retry = ctx.state.options().retry_after_seconds;
  auto p = prepare(ctx, req);
  if (!p.is_ok()) return send_status_error(res, p.status(), retry);
  auto t1 = texts_of(p->body, "text_1", /*allow_one=*/true);
  if (!t1.is_ok()) return send_status_error(res, t1.status(), retry);
  auto t2 = texts_of(p->body, "text_2", /*allow_one=*/true);
  if (!t2.is_ok()) return send_status_error(res, t2.status(), retry);
  if (t1->size() != 1 && t1->size() != t2->size()) {
    return send_status_error(
        res, field_error("text_1", "must be one text or as many texts as text_2"), retry);
  }
  std::string instruction;
  if (Status st = json_fields::read_string(p->body, "instruction", &instruction); !st.is_ok()) {
    return send_status_error(res, st, retry);
  }
  const std::string id = request_id_of(res);
  auto r = score_pairs(*p->engine, *t1, *t2, instruction, id, "text_2");
  if (!r.is_ok()) return send_status_error(res, r.status(), retry);
  json data = json::array();
  for (size_t i = 0; i < r->values.size(); ++i) {
    data.push_back({{"index", i}, {"object", "score"}, {"score", r->values[i]}});
  }
  send_json(res, 200,
            {{"id", id},
             {"object", "list"},
             {"model", ctx.state.model_name()},
             {"data", std::move(data)},
             {"usage", {{"prompt_tokens", r->prompt_tokens}, {"total_tokens", r->prompt_tokens}}}});
}

}  // namespace

HttpApi rerank_api() {
  HttpApi api;
  api.add_routes = [](httplib::Server& server, HttpContext& ctx) {
    for (const char* path : {"/v1/rerank", "/v2/rerank", "/rerank"}) {
      server.Post(path, [&ctx](const httplib::Request& req, httplib::Response& res) {
        handle_rerank(ctx, req, res);
      });
    }
    for (const char* path : {"/score", "/v1/score"}) {
      server.Post(path, [&ctx](const httplib::Request& req, httplib::Response& res) {
        handle_score(ctx, req, res);
      });
    }
  };
  return api;
}

}  // namespace llmserve
