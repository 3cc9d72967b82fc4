// The BERT family (model_type / GGUF architecture "bert": all-MiniLM, bge, e5 ...) as an encoder:
// its config, its tensor names, and the check of its tensors. Canonical (GGUF, as llama.cpp's
// converter writes them) names and PyTorch shapes, H hidden, F ffn, V vocab, P positions:
//   token_embd.weight [V, H], position_embd.weight [P, H], token_types.weight [types, H],
//   token_embd_norm.{weight,bias} [H]; per layer blk.{i}.attn_{q,k,v,output}.{weight [H, H],
//   bias [H]}, attn_output_norm.{weight,bias} [H], ffn_up.{weight [F, H], bias [F]},
//   ffn_down.{weight [H, F], bias [H]}, layer_output_norm.{weight,bias} [H].
// In ModelConfig: rms_norm_eps holds LayerNorm's epsilon, max_context the position table's
// length, num_kv_heads = num_heads.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/core/status.h"
#include "engine/model/model_config.h"

namespace llmserve {

class GgufFile;
class LoadedModel;

// An encoder-only model: it serves pooling requests (embeddings, rerank, score), not generation.
bool is_encoder_only(const ModelConfig& c);

// From an HF config.json of model_type "bert" (absolute positions, GELU). Errors name the key.
Result<ModelConfig> bert_config_from_hf(const nlohmann::json& j);
// From a GGUF of general.architecture "bert" (bert.* keys; bert.attention.causal must be false).
Result<ModelConfig> bert_config_from_gguf(const GgufFile& gguf);

// HF BertModel name ("encoder.layer.3.attention.self.query.weight", with or without the "bert."
// prefix) -> canonical name; empty for tensors the encoder does not use (pooler, MLM head).
std::string bert_canonical_tensor_name(std::string_view hf_name);

// Every tensor above is present with the shape the config implies (the position table may be
// longer than max_context, not shorter).
Status check_bert_tensors(const LoadedModel& model);

}  // namespace llmserve
