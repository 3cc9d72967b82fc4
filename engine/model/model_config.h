// Hyper-parameters of a Llama-family decoder (llama, mistral, qwen2, qwen3, smollm), read from GGUF
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

enum class RopeScalingType { kNone, kLinear, kLlama3, kLongrope };
// The FFN's gate activation: SwiGLU (silu) or GeGLU with the tanh GELU (gemma3).
enum class FfnActivation { kSilu, kGeluTanh };
std::string_view rope_scaling_name(RopeScalingType t);

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  float factor = 1.0f;            // linear: positions divided by factor; llama3: low-freq divisor
  float low_freq_factor = 1.0f;   // llama3 only
  float high_freq_factor = 4.0f;  // llama3 only
  int64_t original_max_position = 8192;  // llama3, longrope
  // longrope (phi3, engine/model/phi3.h): per-frequency divisors (rope_dim / 2 each), the short
  // ones up to original_max_position tokens of context; cos and sin times attention_factor.
  std::vector<float> short_factor, long_factor;
  float attention_factor = 1.0f;
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
  int64_t rope_dim = 0;  // rotated dims per head (phi3 partial_rotary_factor); 0: head_dim
  // true: adjacent pairs (x[2i], x[2i+1]) rotate (llama-arch GGUF, whose Q/K rows llama.cpp's
  // converter permuted); false: halves (x[i], x[i + head_dim/2]) rotate (HF safetensors, qwen2).
  bool rope_interleaved = false;
  bool tie_word_embeddings = false;  // LM head = token embedding (no output.weight)
  bool attention_bias = false;       // q/k/v projections have biases (qwen2)
  // Per-head RMSNorm of q and k over head_dim (blk.{i}.attn_{q,k}_norm.weight) before RoPE:
  // qwen3, gemma3.
  bool qk_norm = false;
  // Gemma 3 (engine/model/gemma3.h). sandwich_norms: blk.{i}.post_attention_norm.weight and
  // post_ffw_norm.weight normalise the attention and FFN outputs before the residual adds.
  FfnActivation ffn_activation = FfnActivation::kSilu;
  bool sandwich_norms = false;
  float embedding_scale = 1.0f;      // token embeddings times this (gemma3: sqrt(hidden_size))
  float attention_scale = 0.0f;      // > 0: softmax scale of q.k; 0: 1 / sqrt(head_dim)
  float final_logit_softcap = 0.0f;  // > 0: logits = cap * tanh(logits / cap)
  // Local layers among global ones (gemma3): local_layers[l] != 0 makes layer l see only its
  // last local_window positions with RoPE base rope_local_theta and no scaling. Empty: none.
  std::vector<uint8_t> local_layers;
  int64_t local_window = 0;
  float rope_local_theta = 10000.0f;
  // A decoder that embeds with bidirectional attention (EmbeddingGemma: HF
  // use_bidirectional_attention, GGUF gemma-embedding): a pooling row attends every row of its
  // prompt, a local layer's window is symmetric (|query - key| < local_window), and the model
  // serves pooling requests only. Its pooling requests run whole in one step (never chunked).
  bool bidirectional = false;
  // Serves embeddings / rerank / score only (an encoder, or a bidirectional decoder): no
  // generation, no prefix cache, no KV kept past a step.
  bool pooling_only() const { return bidirectional || architecture == "bert"; }
  // Each layer's attention window for the KV cache ops (0: full context).
  std::vector<int64_t> layer_windows() const {
    std::vector<int64_t> w(static_cast<size_t>(num_layers), sliding_window);
    for (size_t l = 0; l < local_layers.size() && l < w.size(); ++l) {
      if (local_layers[l] != 0) w[l] = local_window;
    }
    return w;
  }
  int32_t bos_id = -1, eos_id = -1, pad_id = -1;  // -1 = none
  std::vector<int32_t> eos_ids;  // every end-of-sequence id (eos_id first when set)
  int64_t max_context = 0;       // max_position_embeddings / context_length
  // > 0: every layer's attention sees only the last sliding_window positions (the query's
  // included): Mistral's sliding_window, GGUF {arch}.attention.sliding_window. 0: full context.
  int64_t sliding_window = 0;
  // Mixture of experts (mixtral, qwen3moe; num_experts 0: dense). A MoE layer's FFN is
  // num_experts SwiGLU experts of expert_ffn_size rows behind a router: softmax over the experts,
  // the num_experts_used largest kept, their weights divided by their sum when norm_topk_prob.
  // dense_layers (ascending) keep a plain SwiGLU MLP of ffn_size (Qwen3-MoE mlp_only_layers /
  // decoder_sparse_step).
  int64_t num_experts = 0;
  int64_t num_experts_used = 0;
  int64_t expert_ffn_size = 0;
  bool norm_topk_prob = true;
  std::vector<int64_t> dense_layers;
  bool is_moe_layer(int64_t layer) const;

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
