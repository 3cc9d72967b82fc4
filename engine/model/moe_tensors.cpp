#include "engine/model/moe_tensors.h"

#include <array>
#include <charconv>
#include <string>

namespace llmserve {
namespace {

// "model.layers.3.<rest>" -> (3, rest); layer -1 when the name is not a layer's.
std::pair<int64_t, std::string_view> split_layer(std::string_view hf) {
  constexpr std::string_view kLayers = "model.layers.";
  if (!hf.starts_with(kLayers)) return {-1, {}};
  hf.remove_prefix(kLayers.size());
  int64_t layer = -1;
  const auto [ptr, ec] = std::from_chars(hf.data(), hf.data() + hf.size(), layer);
  if (ec != std::errc() || ptr == hf.data() || ptr == hf.data() + hf.size() || *ptr != '.') {
    return {-1, {}};
  }
  return {layer, hf.substr(static_cast<size_t>(ptr - hf.data()) + 1)};
}

// "experts.5.w1.weight" -> (5, "w1.weight").
std::pair<int64_t, std::string_view> split_expert(std::string_view rest) {
  constexpr std::string_view kExperts = "experts.";
  if (!rest.starts_with(kExperts)) return {-1, {}};
  rest.remove_prefix(kExperts.size());
  int64_t e = -1;
  const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), e);
  if (ec != std::errc() || ptr == rest.data() || ptr == rest.data() + rest.size() || *ptr != '.') {
    return {-1, {}};
  }
  return {e, rest.substr(static_cast<size_t>(ptr - rest.data()) + 1)};
}

std::string expert_name(int64_t layer, std::string_view kind, int64_t e) {
  return block_tensor_name(layer, std::string(kind) + "." + std::to_string(e) + ".weight");
}

// Rows [row0, row0 + rows) of expert e of a 3-D tensor [E, R, C], as a [rows, C] view.
TensorView slice(const TensorView& t, int64_t e, int64_t row0, int64_t rows, std::string name) {
  const int64_t R = t.shape[1], C = t.shape[2];
  const size_t row_bytes = kernels::row_bytes(t.type, C);
  TensorView v;
  v.name = std::move(name);
  v.type = t.type;
  v.shape = {rows, C};
  v.data = t.data + (static_cast<size_t>(e * R + row0)) * row_bytes;
  v.nbytes = static_cast<size_t>(rows) * row_bytes;
  return v;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

Result<bool> hf_moe_tensor_views(std::string_view hf_name, const TensorView& t,
                                 std::vector<TensorView>* out) {
  auto [layer, rest] = split_layer(hf_name);
  if (layer < 0) return false;
  for (std::string_view prefix : {"block_sparse_moe.", "mlp."}) {
    if (!rest.starts_with(prefix)) continue;
    std::string_view r = rest.substr(prefix.size());
    if (r == "gate.weight") {
      TensorView v = t;
      v.name = block_tensor_name(layer, "ffn_gate_inp.weight");
      out->push_back(std::move(v));
      return true;
    }
    if (r == "experts.gate_up_proj" || r == "experts.gate_up_proj.weight" ||
        r == "experts.down_proj" || r == "experts.down_proj.weight") {
      if (t.shape.size() != 3 || t.shape[0] <= 0) {
        return data_loss("tensor '" + std::string(hf_name) + "' has shape " + shape_str(t.shape) +
                         ", expected [experts, rows, cols]");
      }
      const int64_t E = t.shape[0], R = t.shape[1];
      if (r.starts_with("experts.down_proj")) {
        for (int64_t e = 0; e < E; ++e)
          out->push_back(slice(t, e, 0, R, expert_name(layer, "ffn_down", e)));
        return true;
      }
      if (R % 2 != 0) {
        return data_loss("tensor '" + std::string(hf_name) + "' has an odd gate_up row count " +
                         std::to_string(R));
      }
      for (int64_t e = 0; e < E; ++e) {
        out->push_back(slice(t, e, 0, R / 2, expert_name(layer, "ffn_gate", e)));
        out->push_back(slice(t, e, R / 2, R / 2, expert_name(layer, "ffn_up", e)));
      }
      return true;
    }
    auto [e, w] = split_expert(r);
    if (e < 0) continue;
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kMap{{
        {"w1.weight", "ffn_gate"},
        {"w3.weight", "ffn_up"},
        {"w2.weight", "ffn_down"},
        {"gate_proj.weight", "ffn_gate"},
        {"up_proj.weight", "ffn_up"},
        {"down_proj.weight", "ffn_down"},
    }};
    for (const auto& [from, kind] : kMap) {
      if (w != from) continue;
      TensorView v = t;
      v.name = expert_name(layer, kind, e);
      out->push_back(std::move(v));
      return true;
    }
  }
  return false;
}

Result<TensorView> expert_matrix(const LoadedModel& model, int64_t layer, std::string_view kind,
                                 int64_t e) {
  const ModelConfig& c = model.config();
  if (e < 0 || e >= c.num_experts) {
    return invalid_argument("expert " + std::to_string(e) + " out of range");
  }
  const std::string packed = block_tensor_name(layer, std::string(kind) + "_exps.weight");
  if (const TensorView* t = model.tensor(packed)) {
    if (t->shape.size() != 3 || t->shape[0] != c.num_experts) {
      return data_loss(model.path() + ": tensor '" + packed + "' has shape " + shape_str(t->shape) +
                       ", expected [" + std::to_string(c.num_experts) + ", rows, cols]");
    }
    return slice(*t, e, 0, t->shape[1], expert_name(layer, kind, e));
  }
  const std::string name = expert_name(layer, kind, e);
  if (const TensorView* t = model.tensor(name)) return *t;
  return data_loss(model.path() + ": missing tensor '" + packed + "' (or '" + name + "')");
}

Status check_moe_tensors(const LoadedModel& model) {
  const ModelConfig& c = model.config();
  const int64_t h = c.hidden_size, f = c.expert_ffn_size;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    if (!c.is_moe_layer(l)) continue;
    const std::string router = block_tensor_name(l, "ffn_gate_inp.weight");
    const TensorView* r = model.tensor(router);
    if (r == nullptr) return data_loss(model.path() + ": missing tensor '" + router + "'");
    if (r->shape != std::vector<int64_t>{c.num_experts, h}) {
      return data_loss(model.path() + ": tensor '" + router + "' has shape " + shape_str(r->shape) +
                       ", the config implies " + shape_str({c.num_experts, h}));
    }
    for (int64_t e = 0; e < c.num_experts; ++e) {
      for (auto [kind, shape] : {std::pair<const char*, std::vector<int64_t>>{"ffn_gate", {f, h}},
                                 {"ffn_up", {f, h}},
                                 {"ffn_down", {h, f}}}) {
        LLMSERVE_ASSIGN_OR_RETURN(TensorView v, expert_matrix(model, l, kind, e));
        if (v.shape != shape) {
          return data_loss(model.path() + ": expert " + std::to_string(e) + " " + kind +
                           " of layer " + std::to_string(l) + " has shape " + shape_str(v.shape) +
                           ", the config implies " + shape_str(shape));
        }
      }
    }
  }
  return Status::ok();
}

uint64_t active_parameter_count(const LoadedModel& model) {
  const ModelConfig& c = model.config();
  uint64_t n = model.parameter_count();
  if (c.num_experts == 0) return n;
  const uint64_t per_expert =
      3ull * static_cast<uint64_t>(c.expert_ffn_size) * static_cast<uint64_t>(c.hidden_size);
  const uint64_t idle = static_cast<uint64_t>(c.num_experts - c.num_experts_used);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    if (c.is_moe_layer(l)) n -= idle * per_expert;
  }
  return n;
}

}  // namespace llmserve
