// Phi-3 / Phi-3.5 / Phi-4-mini specifics: the fused tensors (HF qkv_proj / gate_up_proj, GGUF
// attn_qkv / ffn_up of 2 x ffn_size rows) seen as the graph's separate q / k / v and gate / up
// matrices (zero-copy row ranges), partial rotary dims, and longrope.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

namespace llmserve {

class GgufFile;

// partial_rotary_factor (rope_dim) and longrope (short / long factors, original context, the
// attention factor given or derived from max_position_embeddings / original as transformers
// does), from rope_parameters (transformers 5) or rope_scaling plus top-level keys (4).
Status read_phi3_hf(const nlohmann::json& j, ModelConfig* c);

// phi3.rope.dimension_count, and longrope from the rope_factors_{short,long}.weight tensors,
// phi3.rope.scaling.attn_factor and phi3.rope.scaling.original_context_length.
Status read_phi3_gguf(const GgufFile& gguf, ModelConfig* c);

// The views that replace a fused tensor (canonical name blk.{i}.attn_qkv.weight -> attn_q / k /
// v, or blk.{i}.ffn_up.weight of 2 x ffn_size rows -> ffn_gate, ffn_up); empty when `t` is none.
// Errors: a fused tensor whose rows do not add up.
Result<std::vector<TensorView>> split_phi3_tensor(const TensorView& t, const ModelConfig& c);

// Longrope inverse frequencies for sequences of up to context_len tokens: the long factors when
// context_len exceeds original_max_position (as llama.cpp chooses by its context size), else the
// short ones. Precondition: c.rope_scaling.type == kLongrope.
std::vector<float> longrope_inv_freq(const ModelConfig& c, int64_t context_len);

}  // namespace llmserve
