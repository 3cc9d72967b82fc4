// Whether a model is a yes/no reranker (Qwen3-Reranker, served from its stock checkpoint with no
// overrides) and its scoring rows (PoolingConfig::rank).
//
// HF folder: a Qwen3ForCausalLM that says it is Qwen3-Reranker the ways llama.cpp's converter
// reads it: a "# Qwen3-Reranker..." heading in README.md (the model card), or "qwen3-reranker" in
// the folder's name or config.json's _name_or_path. The rows are the LM head's (the token
// embeddings' when tied) rows of the tokenizer's "yes" and "no" tokens.
// GGUF: {arch}.pooling_type 4 (rank) with cls.output.weight [2, hidden] and
// {arch}.classifier.output_labels naming "yes" and "no", as that converter writes a
// Qwen3-Reranker.
#pragma once

#include <optional>
#include <string>

#include "engine/core/status.h"
#include "engine/model/model_weights.h"
#include "engine/pooling/pooling_config.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

// nullopt: not a reranker. Errors: a reranker whose tokenizer lacks "yes" / "no", whose head
// rows are missing or of a type that cannot be read; a rank GGUF without the yes/no head (a
// classifier this engine does not implement).
Result<std::optional<RankHead>> load_rank_head(const LoadedModel& model, const Tokenizer& tok);

// The HF folder hints alone (exposed for tests): the hint found ("README.md heading ...",
// "folder name", "_name_or_path"), or "" when none. config_json: config.json's text.
std::string qwen3_reranker_hint(const std::string& dir, const std::string& config_json);

}  // namespace llmserve
