// Mixture-of-experts tensors under canonical (GGUF) names, and the parameter counts they imply.
//
// Canonical names of a MoE layer i: blk.{i}.ffn_gate_inp.weight (the router [experts, hidden]);
// the experts either as llama.cpp's 3-D blk.{i}.ffn_{gate,up,down}_exps.weight ([experts, ffn,
// hidden] for gate / up, [experts, hidden, ffn] for down) or one matrix per expert,
// blk.{i}.ffn_{gate,up,down}.{e}.weight (HF checkpoints; llama.cpp's older per-expert names).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/model_weights.h"

namespace llmserve {

// An HF MoE tensor as canonical views, appended to `out`; false when `hf_name` is not one.
// Mixtral (block_sparse_moe.gate, experts.{e}.w1 / w3 / w2), Qwen3-MoE (mlp.gate,
// mlp.experts.{e}.gate_proj / up_proj / down_proj) and transformers 5's fused experts
// (mlp.experts.gate_up_proj [E, 2 x ffn, hidden], gate rows first; mlp.experts.down_proj
// [E, hidden, ffn]), which become one view per expert. Errors: a fused tensor of a bad shape.
Result<bool> hf_moe_tensor_views(std::string_view hf_name, const TensorView& t,
                                 std::vector<TensorView>* out);

// Expert e's matrix of layer `layer`; kind is "ffn_gate", "ffn_up" or "ffn_down". A slice of
// the 3-D tensor when the model has one. Errors: missing tensor, e out of range.
Result<TensorView> expert_matrix(const LoadedModel& model, int64_t layer, std::string_view kind,
                                 int64_t e);

// The router and every expert of each MoE layer with the config's shapes.
Status check_moe_tensors(const LoadedModel& model);

// Parameters one token reads: all but the (num_experts - num_experts_used) experts a MoE layer
// leaves out. Equals parameter_count() for a dense model.
uint64_t active_parameter_count(const LoadedModel& model);

}  // namespace llmserve
