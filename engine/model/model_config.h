// Hyper-parameters of a Llama-family decoder (llama, mistral, qwen2, smollm), read from GGUF
// metadata or an HF config.json.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "llmserve/kernels/kv_cache_ops.h"

namespace llmserve {

class GgufFile;

enum class RopeScalingType { kNone, kLinear, kLlama3 };
std::string_view rope_scaling_name(RopeScalingType t);

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  float factor = 1.0f;            // linear: positions divided by factor; llama3: low-freq divisor
  float low_freq_factor = 1.0f;   // llama3 only
  float high_freq_factor = 4.0f;  // llama3 only
  int64_t original_max_position = 8192;  // llama3 only
  bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
  std::string
      architecture;  // "llama", "mistral", "qwen2" (GGUF general.architecture / HF model_type)
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;  // usually hidden_size / num_heads
  int64_t ffn_size = 0;  // intermediate size of the SwiGLU MLP
  int64_t vocab_size = 0;
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  // true: adjacent pairs (x[2i], x[2i+1]) rotate (llama-arch GGUF, whose Q/K rows llama.cpp's
  // converter permuted); false: halves (x[i], x[i + head_dim/2]) rotate (HF safetensors, qwen2).
  bool rope_interleaved = false;
  bool tie_word_embeddings = false;               // LM head = token embedding (no output.weight)
  bool attention_bias = false;                    // q/k/v projections have biases (qwen2)
  int32_t bos_id = -1, eos_id = -1, pad_id = -1;  // -1 = none
  std::vector<int32_t> eos_ids;  // every end-of-sequence id (eos_id first when set)
  int64_t max_context = 0;       // max_position_embeddings / context_length
  // > 0: every layer's attention sees only the last sliding_window positions (the query's
  // included): Mistral's sliding_window, GGUF {arch}.attention.sliding_window. 0: full context.
  int64_t sliding_window = 0;

  // K and V of one token over all layers: 2 x layers x kv_heads x head_dim x bytes.
  uint64_t kv_bytes_per_token(int bytes_per_element) const {
    return 2ull * static_cast<uint64_t>(num_layers) * static_cast<uint64_t>(num_kv_heads) *
           static_cast<uint64_t>(head_dim) * static_cast<uint64_t>(bytes_per_element);
  }
  // The same arithmetic spelled out: "2 x 30 layers x 3 kv_heads x 64 head_dim x 2 bytes = ...".
  std::string kv_bytes_formula(int bytes_per_element) const;
  // Per token for a cache of dtype d, the per-(token, kv head) scales of int8 / fp8 included.
  uint64_t kv_bytes_per_token(kernels::KvDtype d) const {
    return 2ull * static_cast<uint64_t>(num_layers) * static_cast<uint64_t>(num_kv_heads) *
           static_cast<uint64_t>(kernels::kv_head_row_bytes(d, head_dim));
  }
  // "2 x 30 layers x 3 kv_heads x (64 head_dim x 1 byte + 2 scale bytes) = 11880 bytes/token".
  std::string kv_bytes_formula(kernels::KvDtype d) const;

  // Checks positivity and consistency (heads divide evenly, head_dim even, ...).
  Status validate() const;
  bool operator==(const ModelConfig&) const = default;
};

// From GGUF metadata ({arch}.* keys, e.g. llama.block_count; tokenizer.ggml.*_token_id).
// vocab_size falls back to the token_embd tensor / tokenizer list when the key is absent.
Result<ModelConfig> model_config_from_gguf(const GgufFile& gguf);
// From the text of an HF config.json (model_type llama / mistral / qwen2).
Result<ModelConfig> model_config_from_hf_json(std::string_view json_text);

}  // namespace llmserve
