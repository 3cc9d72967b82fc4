// GetTokenizer's payload: the model's tokenizer files as a stored zip and its SHA-256. A model
// directory gives its own files (tokenizer.json, tokenizer_config.json, and the other tokenizer
// and config files a Hugging Face loader reads, when present); a GGUF file gives the tokenizer
// it holds, exported as Hugging Face files (server/common/hf_tokenizer_export.h).
#pragma once

#include <string>

#include "engine/core/status.h"
#include "engine/engine.h"

namespace llmserve {

struct TokenizerBundle {
  std::string zip;
  std::string sha256_hex;  // lowercase
  int32_t files = 0;
};

Result<TokenizerBundle> make_tokenizer_bundle(const Engine& engine);

std::string sha256_hex(std::string_view bytes);

}  // namespace llmserve
