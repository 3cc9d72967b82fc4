#include "engine/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "engine/model/bert_config.h"
#include "engine/model/gemma3.h"
#include "engine/model/gguf_file.h"
#include "engine/model/moe_config.h"
#include "engine/model/phi3.h"

namespace llmserve {

std::string_view rope_scaling_name(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::kNone:
      return "none";
    case RopeScalingType::kLinear:
      return "linear";
    case RopeScalingType::kLlama3:
      return "llama3";
    case RopeScalingType::kLongrope:
      return "longrope";
  }
  return "unknown";
}

std::string ModelConfig::kv_bytes_formula(int bytes_per_element) const {
  return "2 x " + std::to_string(num_layers) + " layers x " + std::to_string(num_kv_heads) +
         " kv_heads x " + std::to_string(head_dim) + " head_dim x " +
         std::to_string(bytes_per_element) +
         " bytes = " + std::to_string(kv_bytes_per_token(bytes_per_element)) + " bytes/token";
}

std::string ModelConfig::kv_bytes_formula(kernels::KvDtype d) const {
  if (!kernels::kv_dtype_scaled(d)) return kv_bytes_formula(kernels::kv_dtype_bytes(d));
  return "2 x " + std::to_string(num_layers) + " layers x " + std::to_string(num_kv_heads) +
         " kv_heads x (" + std::to_string(head_dim) + " head_dim x " +
         std::to_string(kernels::kv_dtype_bytes(d)) + " byte + " +
         std::to_string(kernels::kKvScaleBytes) +
         " scale bytes) = " + std::to_string(kv_bytes_per_token(d)) + " bytes/token";
}

Status ModelConfig::validate() const {
  auto positive = [](int64_t v, const char* name) -> Status {
    if (v <= 0 || v > (int64_t{1} << 31)) {
      return invalid_argument(std::string("model config: ") + name + " = " + std::to_string(v) +
                              " is out of range");
    }
    return Status::ok();
  };
  LLMSERVE_RETURN_IF_ERROR(positive(hidden_size, "hidden_size"));
  LLMSERVE_RETURN_IF_ERROR(positive(num_layers, "num_layers"));
  LLMSERVE_RETURN_IF_ERROR(positive(num_heads, "num_heads"));
  LLMSERVE_RETURN_IF_ERROR(positive(num_kv_heads, "num_kv_heads"));
  LLMSERVE_RETURN_IF_ERROR(positive(head_dim, "head_dim"));
  LLMSERVE_RETURN_IF_ERROR(positive(ffn_size, "ffn_size"));
  LLMSERVE_RETURN_IF_ERROR(positive(vocab_size, "vocab_size"));
  LLMSERVE_RETURN_IF_ERROR(positive(max_context, "max_context"));
  if (sliding_window < 0 || sliding_window > (int64_t{1} << 31)) {
    return invalid_argument("model config: sliding_window = " + std::to_string(sliding_window) +
                            " is out of range");
  }
  if (num_heads % num_kv_heads != 0) {
    return invalid_argument("model config: num_heads " + std::to_string(num_heads) +
                            " is not a multiple of num_kv_heads " + std::to_string(num_kv_heads));
  }
  if (head_dim % 2 != 0) {
    return invalid_argument("model config: head_dim " + std::to_string(head_dim) + " is odd");
  }
  if (!(rms_norm_eps > 0.0f) || !std::isfinite(rms_norm_eps)) {
    return invalid_argument("model config: rms_norm_eps must be positive");
  }
  if (!(rope_theta > 0.0f) || !std::isfinite(rope_theta)) {
    return invalid_argument("model config: rope_theta must be positive");
  }
  if (rope_scaling.type != RopeScalingType::kNone &&
      (!(rope_scaling.factor > 0.0f) || !std::isfinite(rope_scaling.factor))) {
    return invalid_argument("model config: rope scaling factor must be positive");
  }
  if (rope_scaling.type == RopeScalingType::kLlama3 &&
      (rope_scaling.original_max_position <= 0 ||
       !(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor))) {
    return invalid_argument(
        "model config: llama3 rope scaling needs original_max_position > 0 and "
        "high_freq_factor > low_freq_factor");
  }
  LLMSERVE_RETURN_IF_ERROR(validate_moe_config(*this));
  if (rope_dim < 0 || rope_dim > head_dim || rope_dim % 2 != 0) {
    return invalid_argument("model config: rope_dim " + std::to_string(rope_dim) +
                            " must be even and at most head_dim");
  }
  if (rope_scaling.type == RopeScalingType::kLongrope &&
      (rope_scaling.short_factor.size() != static_cast<size_t>(rope_dim / 2) ||
       rope_scaling.long_factor.size() != rope_scaling.short_factor.size())) {
    return invalid_argument("model config: longrope needs rope_dim / 2 short and long factors");
  }
  if (!local_layers.empty() &&
      (local_layers.size() != static_cast<size_t>(num_layers) || local_window <= 0)) {
    return invalid_argument("model config: local layers need one flag per layer and a window");
  }
  if (!(embedding_scale > 0.0f) || attention_scale < 0.0f || final_logit_softcap < 0.0f) {
    return invalid_argument("model config: embedding / attention scales must be positive");
  }
  for (int32_t id : {bos_id, eos_id, pad_id}) {
    if (id < -1 || id >= vocab_size) {
      return invalid_argument("model config: special token id " + std::to_string(id) +
                              " outside the vocabulary of " + std::to_string(vocab_size));
    }
  }
  return Status::ok();
}

Result<ModelConfig> model_config_from_gguf(const GgufFile& gguf) {
  ModelConfig c;
  const auto arch = gguf.get_string("general.architecture");
  if (!arch) return data_loss("gguf: missing string key general.architecture");
  c.architecture = std::string(*arch);
  if (c.architecture == "bert") return bert_config_from_gguf(gguf);  // an encoder: bert_config.h
  if (c.architecture == "llama" || c.architecture == "mistral") {
    c.rope_interleaved = true;  // llama.cpp's converter permuted the Q/K rows
  } else if (c.architecture == "gemma3" || c.architecture == "gemma-embedding" ||
             c.architecture == "phi3" || c.architecture == "qwen2" || c.architecture == "qwen3" ||
             c.architecture == "qwen3moe") {
    c.rope_interleaved = false;
  } else {
    return unimplemented(
        "gguf: architecture '" + c.architecture +
        "' not supported (llama, mistral, qwen2, qwen3, gemma3, gemma-embedding, phi3, qwen3moe, "
        "bert are)");
  }
  const std::string p = c.architecture + ".";
  auto need = [&](const std::string& key, int64_t* out) -> Status {
    const auto v = gguf.get_i64(key);
    if (!v) return data_loss("gguf: missing or non-integer key " + key);
    *out = *v;
    return Status::ok();
  };
  LLMSERVE_RETURN_IF_ERROR(need(p + "embedding_length", &c.hidden_size));
  LLMSERVE_RETURN_IF_ERROR(need(p + "block_count", &c.num_layers));
  LLMSERVE_RETURN_IF_ERROR(need(p + "attention.head_count", &c.num_heads));
  LLMSERVE_RETURN_IF_ERROR(need(p + "feed_forward_length", &c.ffn_size));
  LLMSERVE_RETURN_IF_ERROR(need(p + "context_length", &c.max_context));
  LLMSERVE_RETURN_IF_ERROR(read_moe_config_gguf(gguf, p, &c));
  c.num_kv_heads = gguf.get_i64(p + "attention.head_count_kv").value_or(c.num_heads);
  if (c.num_heads <= 0) return data_loss("gguf: " + p + "attention.head_count must be positive");
  c.head_dim = gguf.get_i64(p + "attention.key_length").value_or(c.hidden_size / c.num_heads);
  c.rms_norm_eps = gguf.get_f32(p + "attention.layer_norm_rms_epsilon").value_or(1e-5f);
  c.rope_theta = gguf.get_f32(p + "rope.freq_base").value_or(10000.0f);
  c.sliding_window = gguf.get_i64(p + "attention.sliding_window").value_or(0);
  // Per-layer windows (llama.cpp's sliding_window_pattern, a bool per layer): all or none only.
  if (auto pattern = gguf.get_i32_array(p + "attention.sliding_window_pattern");
      c.architecture != "gemma3" && c.architecture != "gemma-embedding" && pattern &&
      !pattern->empty()) {
    const auto sliding =
        std::count_if(pattern->begin(), pattern->end(), [](int32_t v) { return v != 0; });
    if (sliding == 0) c.sliding_window = 0;
    if (sliding != 0 && sliding != static_cast<std::ptrdiff_t>(pattern->size())) {
      return unimplemented("gguf: " + p +
                           "attention.sliding_window_pattern mixes sliding and full attention");
    }
  }

  const std::string_view stype = gguf.get_string(p + "rope.scaling.type").value_or("none");
  if (stype == "linear") {
    c.rope_scaling.type = RopeScalingType::kLinear;
    c.rope_scaling.factor = gguf.get_f32(p + "rope.scaling.factor").value_or(1.0f);
  } else if (stype == "llama3") {
    c.rope_scaling.type = RopeScalingType::kLlama3;
    c.rope_scaling.factor = gguf.get_f32(p + "rope.scaling.factor").value_or(8.0f);
    c.rope_scaling.low_freq_factor =
        gguf.get_f32(p + "rope.scaling.low_freq_factor").value_or(1.0f);
    c.rope_scaling.high_freq_factor =
        gguf.get_f32(p + "rope.scaling.high_freq_factor").value_or(4.0f);
    c.rope_scaling.original_max_position =
        gguf.get_i64(p + "rope.scaling.original_context_length").value_or(8192);
  } else if (stype != "none") {
    return unimplemented("gguf: " + p + "rope.scaling.type '" + std::string(stype) +
                         "' not supported (none, linear, llama3 are)");
  }

  if (auto v = gguf.get_i64(p + "vocab_size")) {
    c.vocab_size = *v;
  } else if (const GgufTensorInfo* emb = gguf.find_tensor("token_embd.weight");
             emb && emb->ne.size() == 2) {
    c.vocab_size = emb->ne[1];
  } else if (auto toks = gguf.get_string_array("tokenizer.ggml.tokens")) {
    c.vocab_size = static_cast<int64_t>(toks->size());
  }
  c.tie_word_embeddings = gguf.find_tensor("output.weight") == nullptr;
  c.attention_bias = gguf.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.qk_norm = gguf.find_tensor("blk.0.attn_q_norm.weight") != nullptr;
  if (c.architecture == "gemma3" || c.architecture == "gemma-embedding") {
    LLMSERVE_RETURN_IF_ERROR(read_gemma3_gguf(gguf, c.architecture, &c));
    c.architecture = "gemma3";  // one graph and tensor layout; bidirectional tells them apart
  }
  if (c.architecture == "phi3") LLMSERVE_RETURN_IF_ERROR(read_phi3_gguf(gguf, &c));
  c.bos_id = gguf.get_i32("tokenizer.ggml.bos_token_id").value_or(-1);
  c.eos_id = gguf.get_i32("tokenizer.ggml.eos_token_id").value_or(-1);
  c.pad_id = gguf.get_i32("tokenizer.ggml.padding_token_id").value_or(-1);
  if (c.eos_id >= 0) c.eos_ids.push_back(c.eos_id);
  if (auto eot = gguf.get_i32("tokenizer.ggml.eot_token_id"); eot && *eot != c.eos_id) {
    c.eos_ids.push_back(*eot);
  }
  Status st = c.validate();
  if (!st.is_ok()) return Status(StatusCode::kDataLoss, "gguf: " + st.message());
  return c;
}

}  // namespace llmserve
