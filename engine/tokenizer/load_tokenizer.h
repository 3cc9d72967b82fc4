// Opens the tokenizer of a model path without loading weights: a .gguf file (its
// tokenizer.ggml.* metadata) or an HF model directory (tokenizer.json + tokenizer_config.json).
#pragma once

#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

Result<TokenizerSpec> load_tokenizer_spec(const std::string& model_path);
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& model_path);

}  // namespace llmserve
