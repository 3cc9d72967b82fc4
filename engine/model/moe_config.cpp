#include "engine/model/moe_config.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/model/gguf_file.h"

namespace llmserve {

using nlohmann::json;

bool ModelConfig::is_moe_layer(int64_t layer) const {
  return num_experts > 0 && !std::binary_search(dense_layers.begin(), dense_layers.end(), layer);
}

Status read_moe_config_gguf(const GgufFile& gguf, const std::string& p, ModelConfig* c) {
  const auto count = gguf.get_i64(p + "expert_count");
  if (!count || *count == 0) return Status::ok();
  c->num_experts = *count;
  const auto used = gguf.get_i64(p + "expert_used_count");
  if (!used) return data_loss("gguf: missing or non-integer key " + p + "expert_used_count");
  c->num_experts_used = *used;
  // Mixtral (arch llama) sizes its experts with feed_forward_length.
  c->expert_ffn_size = gguf.get_i64(p + "expert_feed_forward_length").value_or(c->ffn_size);
  c->norm_topk_prob = gguf.get_bool(p + "expert_weights_norm").value_or(true);
  if (auto f = gguf.get_i64(p + "expert_gating_func"); f && *f != 1) {
    return unimplemented("gguf: " + p + "expert_gating_func " + std::to_string(*f) +
                         " not supported (1, softmax, is)");
  }
  if (auto s = gguf.get_f32(p + "expert_weights_scale"); s && *s != 0.0f && *s != 1.0f) {
    return unimplemented("gguf: " + p + "expert_weights_scale other than 1 is not supported");
  }
  if (auto s = gguf.get_i64(p + "expert_shared_count"); s && *s != 0) {
    return unimplemented("gguf: " + p + "expert_shared_count (shared experts) is not supported");
  }
  for (int64_t l = 0; l < c->num_layers; ++l) {
    if (gguf.find_tensor("blk." + std::to_string(l) + ".ffn_gate_inp.weight") == nullptr) {
      c->dense_layers.push_back(l);
    }
  }
  return Status::ok();
}

namespace {

Status read_count(const json& j, const char* key, int64_t* out, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) return invalid_argument(std::string("config.json: missing key '") + key + "'");
    return Status::ok();
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return invalid_argument(std::string("config.json: '") + key + "' must be a count");
  }
  *out = it->get<int64_t>();
  return Status::ok();
}

}  // namespace

Status read_moe_config_hf(const json& j, ModelConfig* c) {
  const bool mixtral = c->architecture == "mixtral";
  if (!mixtral && c->architecture != "qwen3_moe") return Status::ok();
  // Qwen3-MoE checkpoints say num_experts; transformers 5 saves it as num_local_experts.
  const char* count_key =
      !mixtral && j.contains("num_experts") ? "num_experts" : "num_local_experts";
  LLMSERVE_RETURN_IF_ERROR(read_count(j, count_key, &c->num_experts, true));
  LLMSERVE_RETURN_IF_ERROR(read_count(j, "num_experts_per_tok", &c->num_experts_used, true));
  if (mixtral) {
    c->expert_ffn_size = c->ffn_size;
    c->norm_topk_prob = true;
    return Status::ok();
  }
  LLMSERVE_RETURN_IF_ERROR(read_count(j, "moe_intermediate_size", &c->expert_ffn_size, true));
  c->norm_topk_prob = false;  // transformers' Qwen3MoeConfig default
  if (auto it = j.find("norm_topk_prob"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return invalid_argument("config.json: 'norm_topk_prob' must be bool");
    c->norm_topk_prob = it->get<bool>();
  }
  int64_t step = 1;
  LLMSERVE_RETURN_IF_ERROR(read_count(j, "decoder_sparse_step", &step, false));
  if (step <= 0) return invalid_argument("config.json: 'decoder_sparse_step' must be positive");
  std::vector<int64_t> mlp_only;
  if (auto it = j.find("mlp_only_layers"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return invalid_argument("config.json: 'mlp_only_layers' must be a list");
    for (const json& v : *it) {
      if (!v.is_number_integer()) {
        return invalid_argument("config.json: 'mlp_only_layers' must list layer indices");
      }
      mlp_only.push_back(v.get<int64_t>());
    }
  }
  // transformers' Qwen3MoeDecoderLayer: sparse unless listed in mlp_only_layers or
  // (layer + 1) is not a multiple of decoder_sparse_step.
  for (int64_t l = 0; l < c->num_layers; ++l) {
    const bool listed = std::find(mlp_only.begin(), mlp_only.end(), l) != mlp_only.end();
    if (listed || c->num_experts == 0 || (l + 1) % step != 0) c->dense_layers.push_back(l);
  }
  if (c->num_experts == 0) c->dense_layers.clear();
  return Status::ok();
}

Status validate_moe_config(const ModelConfig& c) {
  if (c.num_experts == 0) return Status::ok();
  if (c.num_experts < 0 || c.num_experts > 4096) {
    return invalid_argument("model config: num_experts = " + std::to_string(c.num_experts) +
                            " is out of range");
  }
  if (c.num_experts_used <= 0 || c.num_experts_used > c.num_experts) {
    return invalid_argument(
        "model config: num_experts_used = " + std::to_string(c.num_experts_used) +
        " must be in 1.." + std::to_string(c.num_experts));
  }
  if (c.expert_ffn_size <= 0 || c.expert_ffn_size > (int64_t{1} << 31)) {
    return invalid_argument("model config: expert_ffn_size = " + std::to_string(c.expert_ffn_size) +
                            " is out of range");
  }
  for (int64_t l : c.dense_layers) {
    if (l < 0 || l >= c.num_layers) {
      return invalid_argument("model config: dense layer " + std::to_string(l) +
                              " outside the model's " + std::to_string(c.num_layers) + " layers");
    }
  }
  if (!std::is_sorted(c.dense_layers.begin(), c.dense_layers.end())) {
    return invalid_argument("model config: dense_layers must be ascending");
  }
  return Status::ok();
}

}  // namespace llmserve
