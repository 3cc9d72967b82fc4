// The mixture-of-experts part of ModelConfig (model_config.h): read from GGUF metadata
// ({arch}.expert_count, expert_used_count, expert_feed_forward_length, expert_weights_norm) or an
// HF config.json (Mixtral's num_local_experts; Qwen3-MoE's num_experts, moe_intermediate_size,
// norm_topk_prob, decoder_sparse_step, mlp_only_layers), and its checks.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "engine/core/status.h"
#include "engine/model/model_config.h"

namespace llmserve {

class GgufFile;

// Sets c->num_experts .. dense_layers from the keys under `prefix` ("llama.", "qwen3moe.");
// a dense model (no expert_count) keeps num_experts 0. A layer is dense when the file has no
// blk.{i}.ffn_gate_inp.weight for it. Errors name the key: a gating function other than
// softmax, scaled or shared experts.
Status read_moe_config_gguf(const GgufFile& gguf, const std::string& prefix, ModelConfig* c);

// The same from config.json of model_type mixtral or qwen3_moe (others: nothing to read).
Status read_moe_config_hf(const nlohmann::json& j, ModelConfig* c);

// num_experts_used in 1..num_experts, expert_ffn_size > 0, dense_layers inside the model.
Status validate_moe_config(const ModelConfig& c);

}  // namespace llmserve
