// Gemma 3 (text) specifics: its config keys (HF config.json, GGUF gemma3.*) and its norm
// weights. Gemma's RMSNorm multiplies by (1 + w); llama.cpp's converter stores 1 + w in the GGUF,
// so the graph reads every norm as a plain RMSNorm weight and HF folders are shifted on load.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "engine/core/status.h"
#include "engine/model/model_config.h"

namespace llmserve {

class GgufFile;
class LoadedModel;

// From a gemma3_text config (or a gemma3 config's text_config) after the common keys were read:
// GeGLU, sandwich norms, q/k norms, the sqrt(hidden) embedding scale, query_pre_attn_scalar,
// final_logit_softcapping, the local layers (layer_types, or sliding_window_pattern) and their
// RoPE base (rope_parameters.sliding_attention / rope_local_base_freq), use_bidirectional_attention
// (EmbeddingGemma). attn_logit_softcapping is refused.
Status read_gemma3_hf(const nlohmann::json& j, ModelConfig* c);

// From GGUF {arch}.* keys (arch "gemma3", or "gemma-embedding": EmbeddingGemma, bidirectional
// with a symmetric window) as llama.cpp reads them: the window pattern (default every 6th layer
// global), rope.freq_base_swa (default 10000), final_logit_softcapping, and the attention scale
// 1 / sqrt(key_length) (1 / sqrt(hidden / heads) for the 62-layer 27B).
Status read_gemma3_gguf(const GgufFile& gguf, const std::string& arch, ModelConfig* c);

// Replaces every *norm.weight tensor of an HF Gemma 3 model by 1 + w in f32.
Status shift_gemma3_norms(LoadedModel& model);

}  // namespace llmserve
