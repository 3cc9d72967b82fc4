// Canonical (GGUF) tensor names and the HF -> canonical mapping.
#include <array>
#include <charconv>
#include <utility>

#include "engine/model/bert_config.h"
#include "engine/model/model_weights.h"

namespace llmserve {

std::string block_tensor_name(int64_t layer, std::string_view suffix) {
  return "blk." + std::to_string(layer) + "." + std::string(suffix);
}

std::string canonical_tensor_name(std::string_view hf) {
  // A base model saved without its causal-LM wrapper (Qwen3Model, as sentence-transformers
  // folders such as Qwen3-Embedding hold it) names its tensors without the "model." prefix.
  if (hf.starts_with("layers.") || hf == "embed_tokens.weight" || hf == "norm.weight") {
    return canonical_tensor_name("model." + std::string(hf));
  }
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  constexpr std::string_view kLayers = "model.layers.";
  if (!hf.starts_with(kLayers)) return {};
  hf.remove_prefix(kLayers.size());
  int64_t layer = -1;
  const auto [ptr, ec] = std::from_chars(hf.data(), hf.data() + hf.size(), layer);
  if (ec != std::errc() || ptr == hf.data() || ptr == hf.data() + hf.size() || *ptr != '.') {
    return {};
  }
  const std::string_view rest = hf.substr(static_cast<size_t>(ptr - hf.data()) + 1);
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 16> kMap{{
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.bias", "attn_output.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.down_proj.bias", "ffn_down.bias"},
  }};
  for (const auto& [from, to] : kMap) {
    if (rest == from) return block_tensor_name(layer, to);
  }
  return {};
}

std::string canonical_tensor_name(std::string_view hf, std::string_view architecture) {
  if (architecture == "bert") return bert_canonical_tensor_name(hf);
  if (architecture == "phi3") {  // fused: split by split_phi3_tensor (engine/model/phi3.h)
    for (const auto& [from, to] : {std::pair<std::string_view, std::string_view>{
                                       ".self_attn.qkv_proj.weight", ".attn_qkv.weight"},
                                   {".mlp.gate_up_proj.weight", ".ffn_up.weight"}}) {
      if (!hf.ends_with(from)) continue;
      const std::string mapped = canonical_tensor_name(
          std::string(hf.substr(0, hf.size() - from.size())) + ".input_layernorm.weight");
      if (mapped.empty()) return {};
      return mapped.substr(0, mapped.size() - std::string_view(".attn_norm.weight").size()) +
             std::string(to);
    }
  }
  if (architecture != "gemma3") return canonical_tensor_name(hf);
  std::string name(hf);
  for (std::string_view prefix : {"model.language_model.", "language_model.model."}) {
    if (hf.starts_with(prefix)) name = "model." + std::string(hf.substr(prefix.size()));
  }
  if (hf == "language_model.lm_head.weight") name = "lm_head.weight";
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kNorms{{
      {".post_attention_layernorm.weight", ".post_attention_norm.weight"},
      {".pre_feedforward_layernorm.weight", ".ffn_norm.weight"},
      {".post_feedforward_layernorm.weight", ".post_ffw_norm.weight"},
  }};
  for (const auto& [from, to] : kNorms) {
    if (name.ends_with(from)) {
      const std::string mapped = canonical_tensor_name(name.substr(0, name.size() - from.size()) +
                                                       ".input_layernorm.weight");
      if (mapped.empty()) return {};
      return mapped.substr(0, mapped.size() - std::string_view(".attn_norm.weight").size()) +
             std::string(to);
    }
  }
  return canonical_tensor_name(name);
}

}  // namespace llmserve
