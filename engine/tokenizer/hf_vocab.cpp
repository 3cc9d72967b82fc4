#include "engine/tokenizer/hf_vocab.h"

#include <algorithm>

namespace llmserve {

namespace {

using nlohmann::json;

constexpr int64_t kMaxId = int64_t{1} << 26;

bool valid_id(const json& id) {
  return id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < kMaxId;
}

}  // namespace

Result<std::unordered_map<std::string, int32_t>> read_hf_vocab(const json& tok,
                                                               TokenizerSpec* spec) {
  const json& model = tok["model"];
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return data_loss("tokenizer.json model.vocab is not an object");
  }
  std::unordered_map<std::string, int32_t> ids;
  int64_t max_id = -1;
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!valid_id(id))
      return data_loss("tokenizer.json vocab id of '" + text + "' is not a valid id");
    ids[text] = id.get<int32_t>();
    max_id = std::max<int64_t>(max_id, id.get<int64_t>());
  }
  const json added = tok.value("added_tokens", json::array());
  if (!added.is_array()) return data_loss("tokenizer.json added_tokens is not a list");
  for (const json& a : added) {
    if (!a.is_object() || !a.contains("id") || !valid_id(a["id"]) || !a.contains("content") ||
        !a["content"].is_string()) {
      return data_loss("tokenizer.json added_tokens entry without a valid id and content");
    }
    max_id = std::max<int64_t>(max_id, a["id"].get<int64_t>());
  }
  spec->tokens.assign(static_cast<size_t>(max_id + 1), std::string());
  spec->token_types.assign(spec->tokens.size(), TokenType::kNormal);
  for (const auto& [text, id] : ids) spec->tokens[static_cast<size_t>(id)] = text;
  for (size_t i = 0; i < spec->tokens.size(); ++i) {
    if (spec->tokens[i].empty()) spec->token_types[i] = TokenType::kUnused;
  }
  for (const json& a : added) {
    const auto id = static_cast<size_t>(a["id"].get<int32_t>());
    spec->tokens[id] = a["content"].get<std::string>();
    const auto special = a.find("special");
    spec->token_types[id] = special != a.end() && special->is_boolean() && special->get<bool>()
                                ? TokenType::kControl
                                : TokenType::kUserDefined;
    ids[spec->tokens[id]] = static_cast<int32_t>(id);
  }
  return ids;
}

}  // namespace llmserve
