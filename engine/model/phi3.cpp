#include "engine/model/phi3.h"

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/model/gguf_file.h"
#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/rope.h"

namespace llmserve {
namespace {

using nlohmann::json;

const json* find(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

Status read_factors(const json& r, const char* key, size_t n, std::vector<float>* out) {
  const json* v = find(r, key);
  if (v == nullptr || !v->is_array() || v->size() != n) {
    return invalid_argument(std::string("config.json: longrope '") + key + "' must hold " +
                            std::to_string(n) + " numbers (rotary dims / 2)");
  }
  for (const json& f : *v) {
    if (!f.is_number() || !(f.get<double>() > 0)) {
      return invalid_argument(std::string("config.json: longrope '") + key +
                              "' must be positive numbers");
    }
    out->push_back(f.get<float>());
  }
  return Status::ok();
}

Result<std::vector<float>> gguf_factors(const GgufFile& gguf, const char* name, size_t n) {
  const GgufTensorInfo* t = gguf.find_tensor(name);
  if (t == nullptr || t->type != DType::F32 || t->data.size() != n * sizeof(float)) {
    return data_loss(std::string("gguf: ") + name + " must be " + std::to_string(n) + " F32");
  }
  std::vector<float> f(n);
  std::memcpy(f.data(), t->data.data(), n * sizeof(float));
  return f;
}

}  // namespace

Status read_phi3_hf(const json& j, ModelConfig* c) {
  const json* rp = find(j, "rope_parameters");
  if (rp == nullptr || !rp->is_object()) rp = find(j, "rope_scaling");
  const json empty = json::object();
  const json& r = rp != nullptr && rp->is_object() ? *rp : empty;
  double prf = 1.0;
  for (const json* src : {&r, &j}) {
    if (const json* v = find(*src, "partial_rotary_factor"); v && v->is_number()) {
      prf = v->get<double>();
      break;
    }
  }
  if (!(prf > 0.0 && prf <= 1.0)) {
    return invalid_argument("config.json: partial_rotary_factor must be in (0, 1]");
  }
  c->rope_dim = static_cast<int64_t>(static_cast<double>(c->head_dim) * prf);
  if (c->rope_scaling.type != RopeScalingType::kLongrope) return Status::ok();
  RopeScaling& s = c->rope_scaling;
  const auto n = static_cast<size_t>(c->rope_dim / 2);
  LLMSERVE_RETURN_IF_ERROR(read_factors(r, "short_factor", n, &s.short_factor));
  LLMSERVE_RETURN_IF_ERROR(read_factors(r, "long_factor", n, &s.long_factor));
  const json* orig = find(r, "original_max_position_embeddings");
  if (orig == nullptr) orig = find(j, "original_max_position_embeddings");
  if (orig == nullptr || !orig->is_number_integer() || orig->get<int64_t>() <= 0) {
    return invalid_argument("config.json: longrope needs original_max_position_embeddings > 0");
  }
  s.original_max_position = orig->get<int64_t>();
  if (const json* af = find(r, "attention_factor"); af && af->is_number()) {
    s.attention_factor = af->get<float>();
    return Status::ok();
  }
  double factor =
      static_cast<double>(c->max_context) / static_cast<double>(s.original_max_position);
  if (const json* f = find(r, "factor"); f && f->is_number()) factor = f->get<double>();
  s.attention_factor =
      factor <= 1.0
          ? 1.0f
          : static_cast<float>(std::sqrt(
                1.0 + std::log(factor) / std::log(static_cast<double>(s.original_max_position))));
  return Status::ok();
}

Status read_phi3_gguf(const GgufFile& gguf, ModelConfig* c) {
  c->rope_dim = gguf.get_i64("phi3.rope.dimension_count").value_or(c->head_dim);
  if (gguf.find_tensor("rope_factors_long.weight") == nullptr) return Status::ok();
  RopeScaling& s = c->rope_scaling;
  s.type = RopeScalingType::kLongrope;
  const auto n = static_cast<size_t>(c->rope_dim / 2);
  LLMSERVE_ASSIGN_OR_RETURN(s.long_factor, gguf_factors(gguf, "rope_factors_long.weight", n));
  LLMSERVE_ASSIGN_OR_RETURN(s.short_factor, gguf_factors(gguf, "rope_factors_short.weight", n));
  s.attention_factor = gguf.get_f32("phi3.rope.scaling.attn_factor").value_or(1.0f);
  s.original_max_position =
      gguf.get_i64("phi3.rope.scaling.original_context_length").value_or(c->max_context);
  return Status::ok();
}

Result<std::vector<TensorView>> split_phi3_tensor(const TensorView& t, const ModelConfig& c) {
  const bool qkv = t.name.ends_with(".attn_qkv.weight");
  const bool gate_up = t.name.ends_with(".ffn_up.weight") && t.rows() == 2 * c.ffn_size;
  if (!qkv && !gate_up) return std::vector<TensorView>{};
  const std::string stem = t.name.substr(0, t.name.rfind('.', t.name.size() - 8) + 1);
  std::vector<std::pair<const char*, int64_t>> parts;
  if (qkv) {
    parts = {{"attn_q.weight", c.num_heads * c.head_dim},
             {"attn_k.weight", c.num_kv_heads * c.head_dim},
             {"attn_v.weight", c.num_kv_heads * c.head_dim}};
  } else {
    parts = {{"ffn_gate.weight", c.ffn_size}, {"ffn_up.weight", c.ffn_size}};
  }
  int64_t total = 0;
  for (const auto& p : parts) total += p.second;
  if (t.shape.size() != 2 || t.rows() != total) {
    return data_loss(t.name + ": fused tensor of " + std::to_string(t.rows()) + " rows, the " +
                     "config implies " + std::to_string(total));
  }
  const size_t row_bytes = kernels::row_bytes(t.type, t.cols());
  std::vector<TensorView> out;
  size_t offset = 0;
  for (const auto& [suffix, rows] : parts) {
    const size_t nbytes = static_cast<size_t>(rows) * row_bytes;
    out.push_back(TensorView{stem + suffix, t.type, {rows, t.cols()}, t.data + offset, nbytes, {}});
    offset += nbytes;
  }
  return out;
}

std::vector<float> longrope_inv_freq(const ModelConfig& c, int64_t context_len) {
  const RopeScaling& s = c.rope_scaling;
  const std::vector<float>& ext =
      context_len > s.original_max_position ? s.long_factor : s.short_factor;
  std::vector<float> f = kernels::rope_inv_freq(static_cast<int>(c.rope_dim), c.rope_theta);
  for (size_t i = 0; i < f.size() && i < ext.size(); ++i) f[i] /= ext[i];
  return f;
}

}  // namespace llmserve
