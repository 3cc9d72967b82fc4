// A tiny random Llama in HF format (config.json, model.safetensors, tokenizer.json) with a given
// vocabulary: a draft model whose guesses are almost always wrong, for the rollback tests.
#pragma once

#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace llmserve::testing {

// Writes the model into `dir` (created). The tokenizer.json carries spec's tokens (token
// `changed_token`, when >= 0, gets a different string) and merges.
void write_tiny_draft(const std::string& dir, const TokenizerSpec& spec, int changed_token = -1);

}  // namespace llmserve::testing
