// config.json (HF transformers) -> ModelConfig.
#include <nlohmann/json.hpp>

#include "engine/model/bert_config.h"
#include "engine/model/gemma3.h"
#include "engine/model/model_config.h"
#include "engine/model/moe_config.h"
#include "engine/model/phi3.h"

namespace llmserve {
namespace {

using nlohmann::json;

Status read_int(const json& j, const char* key, int64_t* out, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) return invalid_argument(std::string("config.json: missing key '") + key + "'");
    return Status::ok();
  }
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    if (v > (uint64_t{1} << 62)) {
      return invalid_argument(std::string("config.json: '") + key + "' is too large");
    }
    *out = static_cast<int64_t>(v);
  } else if (it->is_number_integer()) {
    *out = it->get<int64_t>();
  } else {
    return invalid_argument(std::string("config.json: '") + key + "' must be an integer");
  }
  return Status::ok();
}

Status read_float(const json& j, const char* key, float* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_number()) {
    return invalid_argument(std::string("config.json: '") + key + "' must be a number");
  }
  *out = it->get<float>();
  return Status::ok();
}

// A token id given as an integer or (eos) a list of integers.
Status read_ids(const json& j, const char* key, std::vector<int32_t>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  auto one = [&](const json& v) -> Status {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      return invalid_argument(std::string("config.json: '") + key + "' must be token ids");
    }
    out->push_back(static_cast<int32_t>(v.get<int64_t>()));
    return Status::ok();
  };
  if (it->is_array()) {
    for (const json& v : *it) LLMSERVE_RETURN_IF_ERROR(one(v));
    return Status::ok();
  }
  return one(*it);
}

// `key` is "rope_scaling" (transformers 4) or "rope_parameters" (transformers 5, which also holds
// rope_theta there).
Status read_rope_scaling(const json& j, const char* key, RopeScaling* rs) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_object()) {
    return invalid_argument(std::string("config.json: '") + key + "' must be an object");
  }
  const json& r = *it;
  std::string type;
  for (const char* k : {"rope_type", "type"}) {
    if (auto t = r.find(k); t != r.end() && t->is_string()) {
      type = t->get<std::string>();
      break;
    }
  }
  if (type.empty() || type == "default") return Status::ok();
  if (type == "linear") {
    rs->type = RopeScalingType::kLinear;
  } else if (type == "longrope" || type == "su") {
    rs->type = RopeScalingType::kLongrope;  // the factors: read_phi3_hf
    return Status::ok();
  } else if (type == "llama3") {
    rs->type = RopeScalingType::kLlama3;
  } else {
    return unimplemented("config.json: rope_scaling type '" + type +
                         "' not supported (linear, llama3 are)");
  }
  LLMSERVE_RETURN_IF_ERROR(read_float(r, "factor", &rs->factor));
  LLMSERVE_RETURN_IF_ERROR(read_float(r, "low_freq_factor", &rs->low_freq_factor));
  LLMSERVE_RETURN_IF_ERROR(read_float(r, "high_freq_factor", &rs->high_freq_factor));
  return read_int(r, "original_max_position_embeddings", &rs->original_max_position, false);
}

// Mistral's sliding_window (null = none), for every layer. Qwen2 writes one too but applies it
// only with use_sliding_window, and then from layer max_window_layers on; transformers 5 spells
// the layers out in layer_types. One window for all layers or none is supported.
Status read_sliding_window(const json& j, const std::string& arch, int64_t* window) {
  LLMSERVE_RETURN_IF_ERROR(read_int(j, "sliding_window", window, false));
  const bool qwen = arch == "qwen2" || arch == "qwen3" || arch == "qwen3_moe";
  bool use = !qwen;  // transformers' Qwen2 / Qwen3 default: use_sliding_window false
  if (auto u = j.find("use_sliding_window"); u != j.end() && u->is_boolean()) use = u->get<bool>();
  auto lt = j.find("layer_types");
  if (lt != j.end() && lt->is_array() && !lt->empty()) {
    size_t sliding = 0;
    for (const json& t : *lt)
      sliding += t.is_string() && t.get<std::string>() == "sliding_attention";
    if (sliding == 0) use = false;
    if (sliding != 0 && sliding != lt->size()) {
      return unimplemented("config.json: layer_types mixes sliding and full attention");
    }
  } else if (use && qwen) {
    return unimplemented("config.json: " + arch +
                         " use_sliding_window (max_window_layers) is not supported");
  }
  if (!use) *window = 0;
  return Status::ok();
}

Result<ModelConfig> parse_config(const json& j) {
  if (!j.is_object()) return invalid_argument("config.json: top level must be an object");
  ModelConfig c;
  auto mt = j.find("model_type");
  if (mt == j.end() || !mt->is_string()) {
    return invalid_argument("config.json: missing string key 'model_type'");
  }
  c.architecture = mt->get<std::string>();
  if (c.architecture == "gemma3") {  // Gemma3ForConditionalGeneration: the text model's config
    auto tc = j.find("text_config");
    if (tc == j.end() || !tc->is_object()) {
      return invalid_argument("config.json: gemma3 needs an object 'text_config'");
    }
    json t = *tc;
    t["model_type"] = "gemma3_text";
    for (const char* k : {"bos_token_id", "eos_token_id", "pad_token_id", "vocab_size"}) {
      if (!t.contains(k) && j.contains(k)) t[k] = j[k];
    }
    if (!t.contains("vocab_size")) t["vocab_size"] = 262208;  // Gemma3TextConfig's default
    return parse_config(t);
  }
  if (c.architecture == "bert") return bert_config_from_hf(j);  // an encoder: bert_config.h
  if (c.architecture == "gemma3_text") c.architecture = "gemma3";
  if (c.architecture != "gemma3" && c.architecture != "phi3" && c.architecture != "llama" &&
      c.architecture != "mistral" && c.architecture != "qwen2" && c.architecture != "qwen3" &&
      c.architecture != "mixtral" && c.architecture != "qwen3_moe") {
    return unimplemented("config.json: model_type '" + c.architecture +
                         "' not supported (llama, mistral, qwen2, qwen3, gemma3_text, phi3, "
                         "mixtral, qwen3_moe, bert are)");
  }
  c.qk_norm = c.architecture == "qwen3" || c.architecture == "qwen3_moe";
  c.rope_interleaved = false;
  LLMSERVE_RETURN_IF_ERROR(read_int(j, "hidden_size", &c.hidden_size, true));
  LLMSERVE_RETURN_IF_ERROR(read_int(j, "num_hidden_layers", &c.num_layers, true));
  LLMSERVE_RETURN_IF_ERROR(read_int(j, "num_attention_heads", &c.num_heads, true));
  c.num_kv_heads = c.num_heads;
  LLMSERVE_RETURN_IF_ERROR(read_int(j, "num_key_value_heads", &c.num_kv_heads, false));
  if (c.num_heads <= 0) return invalid_argument("config.json: num_attention_heads must be > 0");
  c.head_dim = c.hidden_size / c.num_heads;
  LLMSERVE_RETURN_IF_ERROR(read_int(j, "head_dim", &c.head_dim, false));
  LLMSERVE_RETURN_IF_ERROR(read_int(j, "intermediate_size", &c.ffn_size, true));
  LLMSERVE_RETURN_IF_ERROR(read_int(j, "vocab_size", &c.vocab_size, true));
  c.max_context = 2048;
  LLMSERVE_RETURN_IF_ERROR(read_int(j, "max_position_embeddings", &c.max_context, false));
  c.rms_norm_eps = 1e-6f;
  LLMSERVE_RETURN_IF_ERROR(read_float(j, "rms_norm_eps", &c.rms_norm_eps));
  c.rope_theta = 10000.0f;
  LLMSERVE_RETURN_IF_ERROR(read_float(j, "rope_theta", &c.rope_theta));
  if (auto rp = j.find("rope_parameters"); rp != j.end() && rp->is_object()) {
    LLMSERVE_RETURN_IF_ERROR(read_float(*rp, "rope_theta", &c.rope_theta));
  }
  const bool v5 = !j.contains("rope_scaling") || j["rope_scaling"].is_null();
  LLMSERVE_RETURN_IF_ERROR(
      read_rope_scaling(j, v5 ? "rope_parameters" : "rope_scaling", &c.rope_scaling));
  if (auto t = j.find("tie_word_embeddings"); t != j.end() && !t->is_null()) {
    if (!t->is_boolean())
      return invalid_argument("config.json: 'tie_word_embeddings' must be bool");
    c.tie_word_embeddings = t->get<bool>();
  }
  if (c.architecture == "gemma3") {
    LLMSERVE_RETURN_IF_ERROR(read_gemma3_hf(j, &c));
  } else {
    if (c.architecture == "phi3") LLMSERVE_RETURN_IF_ERROR(read_phi3_hf(j, &c));
    LLMSERVE_RETURN_IF_ERROR(read_sliding_window(j, c.architecture, &c.sliding_window));
  }
  LLMSERVE_RETURN_IF_ERROR(read_moe_config_hf(j, &c));
  c.attention_bias = c.architecture == "qwen2";
  if (auto t = j.find("attention_bias"); t != j.end() && t->is_boolean()) {
    c.attention_bias = t->get<bool>();
  }
  std::vector<int32_t> bos, pad;
  LLMSERVE_RETURN_IF_ERROR(read_ids(j, "bos_token_id", &bos));
  LLMSERVE_RETURN_IF_ERROR(read_ids(j, "eos_token_id", &c.eos_ids));
  LLMSERVE_RETURN_IF_ERROR(read_ids(j, "pad_token_id", &pad));
  c.bos_id = bos.empty() ? -1 : bos[0];
  c.eos_id = c.eos_ids.empty() ? -1 : c.eos_ids[0];
  c.pad_id = pad.empty() ? -1 : pad[0];
  Status st = c.validate();
  if (!st.is_ok()) return Status(st.code(), "config.json: " + st.message());
  return c;
}

}  // namespace

Result<ModelConfig> model_config_from_hf_json(std::string_view json_text) {
  const json j = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (j.is_discarded()) return invalid_argument("config.json: not valid JSON");
  try {
    return parse_config(j);
  } catch (const std::exception& e) {
    return invalid_argument(std::string("config.json: ") + e.what());
  }
}

}  // namespace llmserve
