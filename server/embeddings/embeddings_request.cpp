#include "server/embeddings/embeddings_request.h"

#include "engine/model/model_config.h"
#include "engine/pooling/pooler.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/common/embedding_job.h"
#include "server/http/json_fields.h"

namespace llmserve {
namespace {

using json = nlohmann::json;

Result<std::vector<int32_t>> token_list(const json& list, int32_t vocab) {
  std::vector<int32_t> ids;
  if (list.empty()) return field_error("input", "a token list must not be empty");
  for (const json& x : list) {
    auto id = json_fields::integer_value(x, "input");
    if (!id.is_ok()) return id.status();
    if (*id < 0 || *id >= vocab) {
      return field_error("input", "token id " + std::to_string(*id) + " is outside the vocab [0, " +
                                      std::to_string(vocab) + ")");
    }
    ids.push_back(static_cast<int32_t>(*id));
  }
  return ids;
}

}  // namespace

Result<std::vector<int32_t>> tokenize_for_pooling(const Engine& engine, const std::string& text,
                                                  const std::string& prompt_name) {
  std::string prefix;
  if (const Pooler* p = engine.pooler()) {
    const PoolingConfig& c = p->config();
    const std::string& name = prompt_name.empty() ? c.default_prompt_name : prompt_name;
    if (!name.empty()) {
      auto it = c.prompts.find(name);
      if (it == c.prompts.end()) {
        std::string known;
        for (const auto& [k, v] : c.prompts) known += (known.empty() ? "" : ", ") + k;
        return field_error("prompt_name", "the model has no prompt '" + name + "' (it has: " +
                                              (known.empty() ? "none" : known) + ")");
      }
      prefix = it->second;
    }
  }
  std::vector<int32_t> ids =
      engine.tokenizer().encode(prefix + text, /*add_special=*/true, /*parse_special=*/true);
  if (ids.empty()) return field_error("input", "a text gave no tokens");
  return ids;
}

Result<EmbeddingsRequest> read_embeddings_request(const json& body, const Engine& engine,
                                                  size_t max_inputs) {
  EmbeddingsRequest r;
  if (Status use = check_pooling_use(engine, PoolingUse::kEmbed); !use.is_ok()) {
    return field_error("model", use.message());
  }
  if (!json_fields::present(body, "input")) return field_error("input", "is required");
  std::string prompt_name;
  LLMSERVE_RETURN_IF_ERROR(json_fields::read_string(body, "prompt_name", &prompt_name));
  std::string format = "float";
  LLMSERVE_RETURN_IF_ERROR(json_fields::read_string(body, "encoding_format", &format));
  if (format != "float" && format != "base64") {
    return field_error("encoding_format", "must be 'float' or 'base64', got '" + format + "'");
  }
  r.base64 = format == "base64";
  if (json_fields::present(body, "dimensions")) {
    LLMSERVE_RETURN_IF_ERROR(
        json_fields::read_int32(body, "dimensions", 1, INT32_MAX, &r.dimensions));
    const Status st = engine.pooler() ? engine.pooler()->check_dimensions(r.dimensions)
                                      : invalid_argument("this model cannot embed");
    if (!st.is_ok()) return field_error("dimensions", st.message());
  }
  const auto vocab = static_cast<int32_t>(engine.model_config().vocab_size);
  const json& in = body.at("input");
  auto text = [&](const json& s) -> Result<std::vector<int32_t>> {
    if (s.get_ref<const std::string&>().empty()) {
      return field_error("input", "texts must not be empty");
    }
    return tokenize_for_pooling(engine, s.get<std::string>(), prompt_name);
  };
  if (in.is_string()) {
    LLMSERVE_ASSIGN_OR_RETURN(auto ids, text(in));
    r.inputs.push_back(std::move(ids));
  } else if (in.is_array()) {
    if (in.empty()) return field_error("input", "must not be an empty list");
    if (in.front().is_number()) {
      LLMSERVE_ASSIGN_OR_RETURN(auto ids, token_list(in, vocab));
      r.inputs.push_back(std::move(ids));
    } else if (in.size() > max_inputs) {
      return field_error("input", "at most " + std::to_string(max_inputs) +
                                      " inputs per request, got " + std::to_string(in.size()));
    } else {
      for (const json& item : in) {
        if (item.is_string()) {
          LLMSERVE_ASSIGN_OR_RETURN(auto ids, text(item));
          r.inputs.push_back(std::move(ids));
        } else if (item.is_array()) {
          LLMSERVE_ASSIGN_OR_RETURN(auto ids, token_list(item, vocab));
          r.inputs.push_back(std::move(ids));
        } else {
          return field_error("input", "list items must be strings or lists of token ids");
        }
      }
    }
  } else {
    return field_error("input", "must be a string, a list of strings, or token ids");
  }
  return r;
}

}  // namespace llmserve
