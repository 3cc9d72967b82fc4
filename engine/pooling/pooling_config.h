// What turns a model's hidden states into a sentence vector (or a relevance score): the pooling
// of the prompt's rows, the projection layers after it, normalisation, and the prompts the model
// was trained with. Read from a sentence-transformers folder (modules.json, 1_Pooling/config.json,
// N_Dense/, N_Normalize, config_sentence_transformers.json) or from a GGUF
// ({arch}.pooling_type, as llama.cpp's converter writes it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/model_weights.h"

namespace llmserve {

enum class PoolingType { kLast, kMean, kCls };
const char* pooling_type_name(PoolingType t);  // "last", "mean", "cls"

enum class DenseActivation { kIdentity, kTanh };

// y[out] = act(W[out, in] . x + b[out]); W row-major, b empty when the layer has no bias.
struct DenseLayer {
  int64_t in_features = 0, out_features = 0;
  std::vector<float> weight, bias;
  DenseActivation activation = DenseActivation::kIdentity;
};

// A yes/no reranker's scoring head (Qwen3-Reranker): the LM head's rows of the "yes" and "no"
// tokens. A prompt's relevance score is softmax(yes . x, no . x)[yes] = P("yes"), x its last
// row after the final norm (engine/pooling/rank_head.h finds it).
struct RankHead {
  std::vector<float> yes, no;  // [hidden] each
  std::string source;          // what said the model is a reranker, for the start-up log
};

struct PoolingConfig {
  PoolingType type = PoolingType::kLast;
  std::optional<RankHead> rank;                // set: a reranker (pooling is last, one score)
  bool normalize = true;                       // L2-normalise the output vector
  std::vector<DenseLayer> dense;               // in order, after pooling
  std::map<std::string, std::string> prompts;  // name -> text put before the input
  std::string default_prompt_name;             // "" = none
  std::string source;                          // where it was read from, for the start-up log
  // The output vector's width: the last Dense layer's out_features, or the hidden size.
  // A reranker's "vector" is its one score.
  int64_t dimensions(int64_t hidden_size) const {
    if (rank) return 1;
    return dense.empty() ? hidden_size : dense.back().out_features;
  }
};

// The model's pooling, or nullopt when the model says nothing about it (a plain causal LM: its
// embeddings use last-token pooling and normalisation, as vLLM's default for decoders does).
// Errors: a folder whose modules.json names a module or setting this engine does not implement
// (the message names it), or an unreadable / malformed file.
Result<std::optional<PoolingConfig>> load_pooling_config(const LoadedModel& model);

// The same from a sentence-transformers folder alone (exposed for tests).
Result<std::optional<PoolingConfig>> load_sentence_transformers_config(const std::string& dir);

}  // namespace llmserve
