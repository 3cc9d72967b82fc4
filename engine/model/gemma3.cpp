#include "engine/model/gemma3.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/gguf_file.h"
#include "engine/model/model_weights.h"
#include "llmserve/kernels/dequantize.h"
#include "llmserve/kernels/host_memory.h"

namespace llmserve {
namespace {

using nlohmann::json;

std::optional<double> number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

void set_common(ModelConfig* c) {
  c->rope_interleaved = false;
  c->qk_norm = true;
  c->sandwich_norms = true;
  c->ffn_activation = FfnActivation::kGeluTanh;
  c->embedding_scale = std::sqrt(static_cast<float>(c->hidden_size));
}

// A per-layer-type rope_parameters entry: its theta, and (global layers) linear scaling.
Status read_rope_entry(const json& r, const std::string& where, bool allow_scaling, float* theta,
                       RopeScaling* scaling) {
  if (!r.is_object()) return invalid_argument("config.json: " + where + " must be an object");
  if (auto t = number(r, "rope_theta")) *theta = static_cast<float>(*t);
  std::string type = "default";
  if (auto t = r.find("rope_type"); t != r.end() && t->is_string()) type = t->get<std::string>();
  if (type == "default") return Status::ok();
  if (type == "linear" && allow_scaling) {
    scaling->type = RopeScalingType::kLinear;
    if (auto f = number(r, "factor")) scaling->factor = static_cast<float>(*f);
    return Status::ok();
  }
  return unimplemented("config.json: " + where + " rope_type '" + type +
                       "' not supported for gemma3 (default; linear on global layers)");
}

}  // namespace

Status read_gemma3_hf(const json& j, ModelConfig* c) {
  set_common(c);
  std::string act = "gelu_pytorch_tanh";
  for (const char* k : {"hidden_activation", "hidden_act"}) {
    if (auto a = j.find(k); a != j.end() && a->is_string()) {
      act = a->get<std::string>();
      break;
    }
  }
  if (act != "gelu_pytorch_tanh" && act != "gelu_tanh") {
    return unimplemented("config.json: gemma3 hidden_activation '" + act +
                         "' not supported (gelu_pytorch_tanh is)");
  }
  if (auto s = j.find("attn_logit_softcapping"); s != j.end() && !s->is_null()) {
    return unimplemented("config.json: gemma3 attn_logit_softcapping is not supported");
  }
  if (auto s = number(j, "final_logit_softcapping")) {
    c->final_logit_softcap = static_cast<float>(*s);
  }
  const double qpas = number(j, "query_pre_attn_scalar").value_or(256.0);
  if (!(qpas > 0)) return invalid_argument("config.json: query_pre_attn_scalar must be positive");
  c->attention_scale = static_cast<float>(1.0 / std::sqrt(qpas));

  c->local_window = 4096;
  if (auto w = number(j, "sliding_window")) c->local_window = static_cast<int64_t>(*w);
  if (auto b = j.find("use_bidirectional_attention"); b != j.end() && b->is_boolean()) {
    c->bidirectional = b->get<bool>();
  }
  if (c->local_window <= 0) return invalid_argument("config.json: sliding_window must be > 0");
  // transformers' Gemma3TextConfig turns the saved window w into w / 2 + 1 in bidirectional
  // mode (a key within |query - key| < w / 2 + 1 is seen), as llama.cpp's symmetric window does.
  if (c->bidirectional) c->local_window = c->local_window / 2 + 1;
  c->local_layers.assign(static_cast<size_t>(c->num_layers), 0);
  auto lt = j.find("layer_types");
  if (lt != j.end() && lt->is_array()) {
    if (lt->size() != c->local_layers.size()) {
      return invalid_argument("config.json: layer_types has " + std::to_string(lt->size()) +
                              " entries for " + std::to_string(c->num_layers) + " layers");
    }
    for (size_t i = 0; i < lt->size(); ++i) {
      const json& t = (*lt)[i];
      if (!t.is_string()) return invalid_argument("config.json: layer_types must be strings");
      c->local_layers[i] = t.get<std::string>() == "sliding_attention";
    }
  } else {
    const auto pattern = static_cast<int64_t>(number(j, "sliding_window_pattern").value_or(6));
    if (pattern <= 0) return invalid_argument("config.json: sliding_window_pattern must be > 0");
    for (int64_t i = 0; i < c->num_layers; ++i) {
      c->local_layers[static_cast<size_t>(i)] = (i + 1) % pattern != 0;
    }
  }

  // transformers 4: rope_theta (global), rope_scaling (global), rope_local_base_freq (local);
  // transformers 5: rope_parameters.{full_attention, sliding_attention}.
  c->rope_local_theta = static_cast<float>(number(j, "rope_local_base_freq").value_or(10000.0));
  if (auto rp = j.find("rope_parameters"); rp != j.end() && rp->is_object()) {
    if (auto f = rp->find("full_attention"); f != rp->end()) {
      c->rope_scaling = RopeScaling{};
      LLMSERVE_RETURN_IF_ERROR(read_rope_entry(*f, "rope_parameters.full_attention", true,
                                               &c->rope_theta, &c->rope_scaling));
    }
    if (auto s = rp->find("sliding_attention"); s != rp->end()) {
      RopeScaling none;
      LLMSERVE_RETURN_IF_ERROR(read_rope_entry(*s, "rope_parameters.sliding_attention", false,
                                               &c->rope_local_theta, &none));
    }
  }
  return Status::ok();
}

Status read_gemma3_gguf(const GgufFile& gguf, const std::string& arch, ModelConfig* c) {
  set_common(c);
  const std::string p = arch + ".";
  c->final_logit_softcap = gguf.get_f32(p + "final_logit_softcapping").value_or(0.0f);
  c->attention_scale = c->num_layers == 62
                           ? 1.0f / std::sqrt(static_cast<float>(c->hidden_size / c->num_heads))
                           : 1.0f / std::sqrt(static_cast<float>(c->head_dim));
  c->local_window = c->sliding_window;
  c->sliding_window = 0;
  // gemma-embedding (EmbeddingGemma): llama.cpp's symmetric window, |query - key| <= n_swa / 2.
  c->bidirectional = arch == "gemma-embedding";
  if (c->bidirectional && c->local_window > 0) c->local_window = c->local_window / 2 + 1;
  c->local_layers.clear();
  if (c->local_window > 0) {
    c->local_layers.assign(static_cast<size_t>(c->num_layers), 0);
    const std::string key = p + "attention.sliding_window_pattern";
    if (auto arr = gguf.get_i32_array(key); arr && !arr->empty()) {
      if (arr->size() != c->local_layers.size()) {
        return data_loss("gguf: " + key + " has " + std::to_string(arr->size()) + " entries for " +
                         std::to_string(c->num_layers) + " layers");
      }
      for (size_t i = 0; i < arr->size(); ++i) c->local_layers[i] = (*arr)[i] != 0;
    } else {
      const int64_t pattern = gguf.get_i64(key).value_or(6);
      if (pattern <= 0) return data_loss("gguf: " + key + " must be positive");
      for (int64_t i = 0; i < c->num_layers; ++i) {
        c->local_layers[static_cast<size_t>(i)] = (i + 1) % pattern != 0;
      }
    }
  }
  c->rope_local_theta = gguf.get_f32(p + "rope.freq_base_swa").value_or(10000.0f);
  return Status::ok();
}

Status shift_gemma3_norms(LoadedModel& model) {
  std::vector<std::string> names;
  for (const TensorView& t : model.tensors()) {
    if (t.name.ends_with("norm.weight")) names.push_back(t.name);
  }
  for (const std::string& name : names) {
    const TensorView* t = model.tensor(name);
    const int64_t n = t->num_elements();
    if (!kernels::dtype_can_dequantize(t->type) || t->shape.size() != 1) {
      return unimplemented(model.path() + ": norm " + name + " of type " +
                           std::string(kernels::dtype_name(t->type)) + " cannot be read");
    }
    auto* f = static_cast<float*>(kernels::host_alloc(static_cast<size_t>(n) * sizeof(float)));
    if (f == nullptr) return resource_exhausted("cannot allocate the norm " + name);
    kernels::dequantize_row(t->type, t->data, f, n);
    for (int64_t i = 0; i < n; ++i) f[i] += 1.0f;
    LLMSERVE_RETURN_IF_ERROR(
        model.replace_tensor_data(name, DType::F32, f, static_cast<size_t>(n) * sizeof(float)));
  }
  return Status::ok();
}

}  // namespace llmserve
