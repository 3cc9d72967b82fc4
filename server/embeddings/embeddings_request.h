// OpenAI's POST /v1/embeddings body, read and checked: `input` as a string, a list of strings,
// a list of token ids or a list of such lists; `encoding_format` float or base64; `dimensions`
// (Matryoshka); `model`, `user` checked or ignored. Extension: `prompt_name`, one of the model's
// sentence-transformers prompts (config_sentence_transformers.json), put before every string
// input (the model's default_prompt_name when absent); token-id inputs are taken as they are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/engine.h"

namespace llmserve {

struct EmbeddingsRequest {
  std::vector<std::vector<int32_t>> inputs;  // token ids, special tokens included
  int32_t dimensions = 0;                    // 0 = the model's width
  bool base64 = false;
};

// Errors name the field (INVALID_ARGUMENT "<field>: ..."): an empty input or list, a non-string
// non-integer item, token ids outside the vocab, a prompt name the model does not have,
// dimensions outside 1..width, an unknown encoding_format.
Result<EmbeddingsRequest> read_embeddings_request(const nlohmann::json& body, const Engine& engine,
                                                  size_t max_inputs);

// Texts to token ids the way sentence-transformers' tokenizer call does (special tokens added,
// e.g. Qwen3-Embedding's trailing end-of-text), after the named prompt ("" = the default).
Result<std::vector<int32_t>> tokenize_for_pooling(const Engine& engine, const std::string& text,
                                                  const std::string& prompt_name);

}  // namespace llmserve
