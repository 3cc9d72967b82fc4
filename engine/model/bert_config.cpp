#include "engine/model/bert_config.h"

#include <array>
#include <charconv>
#include <utility>

#include "engine/model/gguf_file.h"
#include "engine/model/model_weights.h"

namespace llmserve {
namespace {

using nlohmann::json;

Status need_int(const json& j, const char* key, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) {
    return invalid_argument(std::string("config.json: bert needs an integer '") + key + "'");
  }
  *out = it->get<int64_t>();
  return Status::ok();
}

// The encoder's fields common to both sources, checked.
Status finish(ModelConfig* c) {
  c->architecture = "bert";
  c->num_kv_heads = c->num_heads;
  if (c->num_heads > 0 && c->hidden_size % c->num_heads != 0) {
    return invalid_argument("bert: hidden size " + std::to_string(c->hidden_size) +
                            " is not a multiple of the head count " + std::to_string(c->num_heads));
  }
  c->head_dim = c->num_heads > 0 ? c->hidden_size / c->num_heads : 0;
  c->tie_word_embeddings = true;  // no LM head; nothing reads output.weight
  return c->validate();
}

}  // namespace

bool is_encoder_only(const ModelConfig& c) {
  return c.architecture == "bert";
}

Result<ModelConfig> bert_config_from_hf(const json& j) {
  ModelConfig c;
  LLMSERVE_RETURN_IF_ERROR(need_int(j, "hidden_size", &c.hidden_size));
  LLMSERVE_RETURN_IF_ERROR(need_int(j, "num_hidden_layers", &c.num_layers));
  LLMSERVE_RETURN_IF_ERROR(need_int(j, "num_attention_heads", &c.num_heads));
  LLMSERVE_RETURN_IF_ERROR(need_int(j, "intermediate_size", &c.ffn_size));
  LLMSERVE_RETURN_IF_ERROR(need_int(j, "vocab_size", &c.vocab_size));
  LLMSERVE_RETURN_IF_ERROR(need_int(j, "max_position_embeddings", &c.max_context));
  c.rms_norm_eps = 1e-12f;  // BertConfig's default
  if (auto it = j.find("layer_norm_eps"); it != j.end()) {
    if (!it->is_number()) return invalid_argument("config.json: 'layer_norm_eps' is not a number");
    c.rms_norm_eps = it->get<float>();
  }
  const std::string act = j.value("hidden_act", std::string("gelu"));
  if (act != "gelu") {
    return unimplemented("config.json: bert hidden_act '" + act + "' is not supported (gelu is)");
  }
  const std::string pos = j.value("position_embedding_type", std::string("absolute"));
  if (pos != "absolute") {
    return unimplemented("config.json: bert position_embedding_type '" + pos +
                         "' is not supported (absolute is)");
  }
  if (auto it = j.find("pad_token_id"); it != j.end() && it->is_number_integer()) {
    c.pad_id = it->get<int32_t>();
  }
  LLMSERVE_RETURN_IF_ERROR(finish(&c));
  return c;
}

Result<ModelConfig> bert_config_from_gguf(const GgufFile& gguf) {
  ModelConfig c;
  auto need = [&](const char* key, int64_t* out) -> Status {
    const auto v = gguf.get_i64(key);
    if (!v) return data_loss(std::string("gguf: missing or non-integer key ") + key);
    *out = *v;
    return Status::ok();
  };
  LLMSERVE_RETURN_IF_ERROR(need("bert.embedding_length", &c.hidden_size));
  LLMSERVE_RETURN_IF_ERROR(need("bert.block_count", &c.num_layers));
  LLMSERVE_RETURN_IF_ERROR(need("bert.attention.head_count", &c.num_heads));
  LLMSERVE_RETURN_IF_ERROR(need("bert.feed_forward_length", &c.ffn_size));
  LLMSERVE_RETURN_IF_ERROR(need("bert.context_length", &c.max_context));
  const auto eps = gguf.get_f32("bert.attention.layer_norm_epsilon");
  if (!eps) return data_loss("gguf: missing key bert.attention.layer_norm_epsilon");
  c.rms_norm_eps = *eps;
  if (gguf.get_bool("bert.attention.causal").value_or(false)) {
    return unimplemented("gguf: bert.attention.causal is true; a causal BERT is not supported");
  }
  for (const GgufTensorInfo& t : gguf.tensors()) {
    if (t.name == "token_embd.weight" && t.ne.size() == 2) c.vocab_size = t.ne[1];
  }
  if (c.vocab_size == 0) return data_loss("gguf: bert has no 2-D token_embd.weight");
  if (const auto pad = gguf.get_i64("tokenizer.ggml.padding_token_id");
      pad && *pad >= 0 && *pad < c.vocab_size) {
    c.pad_id = static_cast<int32_t>(*pad);
  }
  LLMSERVE_RETURN_IF_ERROR(finish(&c));
  return c;
}

std::string bert_canonical_tensor_name(std::string_view hf) {
  if (hf.starts_with("bert.")) hf.remove_prefix(5);
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kTop{{
      {"embeddings.word_embeddings.weight", "token_embd.weight"},
      {"embeddings.position_embeddings.weight", "position_embd.weight"},
      {"embeddings.token_type_embeddings.weight", "token_types.weight"},
      {"embeddings.LayerNorm.weight", "token_embd_norm.weight"},
      {"embeddings.LayerNorm.bias", "token_embd_norm.bias"},
  }};
  for (const auto& [from, to] : kTop) {
    if (hf == from) return std::string(to);
  }
  constexpr std::string_view kLayer = "encoder.layer.";
  if (!hf.starts_with(kLayer)) return {};
  hf.remove_prefix(kLayer.size());
  int64_t layer = -1;
  const auto [ptr, ec] = std::from_chars(hf.data(), hf.data() + hf.size(), layer);
  if (ec != std::errc() || ptr == hf.data() || ptr == hf.data() + hf.size() || *ptr != '.') {
    return {};
  }
  std::string_view rest = hf.substr(static_cast<size_t>(ptr - hf.data()) + 1);
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kLayerMap{{
      {"attention.self.query.", "attn_q."},
      {"attention.self.key.", "attn_k."},
      {"attention.self.value.", "attn_v."},
      {"attention.output.dense.", "attn_output."},
      {"attention.output.LayerNorm.", "attn_output_norm."},
      {"intermediate.dense.", "ffn_up."},
      {"output.dense.", "ffn_down."},
      {"output.LayerNorm.", "layer_output_norm."},
  }};
  for (const auto& [from, to] : kLayerMap) {
    if (!rest.starts_with(from)) continue;
    const std::string_view kind = rest.substr(from.size());
    if (kind != "weight" && kind != "bias") return {};
    return block_tensor_name(layer, std::string(to) + std::string(kind));
  }
  return {};
}

Status check_bert_tensors(const LoadedModel& m) {
  const ModelConfig& c = m.config();
  auto str = [](const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
  };
  auto expect = [&](const std::string& name, std::vector<int64_t> shape) -> Status {
    const TensorView* t = m.tensor(name);
    if (t == nullptr) return data_loss(m.path() + ": missing tensor '" + name + "'");
    if (t->shape != shape) {
      return data_loss(m.path() + ": tensor '" + name + "' has shape " + str(t->shape) +
                       ", the config implies " + str(shape));
    }
    return Status::ok();
  };
  const int64_t H = c.hidden_size, F = c.ffn_size;
  LLMSERVE_RETURN_IF_ERROR(expect("token_embd.weight", {c.vocab_size, H}));
  for (const char* name : {"position_embd.weight", "token_types.weight"}) {
    const TensorView* t = m.tensor(name);
    if (t == nullptr) return data_loss(m.path() + ": missing tensor '" + std::string(name) + "'");
    if (t->shape.size() != 2 || t->shape[1] != H || t->shape[0] < 1) {
      return data_loss(m.path() + ": tensor '" + std::string(name) + "' has shape " +
                       str(t->shape) + ", expected [rows, " + std::to_string(H) + "]");
    }
  }
  if (m.tensor("position_embd.weight")->shape[0] < c.max_context) {
    return data_loss(m.path() + ": position_embd.weight has fewer rows than the context length " +
                     std::to_string(c.max_context));
  }
  LLMSERVE_RETURN_IF_ERROR(expect("token_embd_norm.weight", {H}));
  LLMSERVE_RETURN_IF_ERROR(expect("token_embd_norm.bias", {H}));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    auto b = [i](std::string_view s) { return block_tensor_name(i, s); };
    for (const char* p : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      LLMSERVE_RETURN_IF_ERROR(expect(b(std::string(p) + ".weight"), {H, H}));
      LLMSERVE_RETURN_IF_ERROR(expect(b(std::string(p) + ".bias"), {H}));
    }
    for (const char* p : {"attn_output_norm", "layer_output_norm"}) {
      LLMSERVE_RETURN_IF_ERROR(expect(b(std::string(p) + ".weight"), {H}));
      LLMSERVE_RETURN_IF_ERROR(expect(b(std::string(p) + ".bias"), {H}));
    }
    LLMSERVE_RETURN_IF_ERROR(expect(b("ffn_up.weight"), {F, H}));
    LLMSERVE_RETURN_IF_ERROR(expect(b("ffn_up.bias"), {F}));
    LLMSERVE_RETURN_IF_ERROR(expect(b("ffn_down.weight"), {H, F}));
    LLMSERVE_RETURN_IF_ERROR(expect(b("ffn_down.bias"), {H}));
  }
  return Status::ok();
}

}  // namespace llmserve
