// A TokenizerSpec (as a GGUF file holds it) written as Hugging Face tokenizer files, so that a
// client with the `tokenizers` library (a router such as smg, lm-eval) encodes exactly as
// llmserve does: tokenizer.json, tokenizer_config.json (special token names, add_bos / add_eos,
// the chat template) and generation_config.json (BOS and the end-of-sequence ids).
// Byte-level BPE: the vocabulary and merges, the pre-tokenizer's regex sequence as Split steps
// then ByteLevel. SentencePiece BPE (Llama-2 / Mistral GGUF files hold scores, not merges): the
// merges HF's conversion derives (two normal pieces whose concatenation is a normal piece,
// ranked by its score), byte fallback, "▁" for spaces. WordPiece (a BERT GGUF): BertNormalizer,
// BertPreTokenizer and the "##" vocab. All: the special tokens, BOS / EOS added as the spec says.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

struct ExportedFile {
  std::string name;  // a plain file name ("tokenizer.json")
  std::string bytes;
};

struct HfExportOptions {
  int32_t model_max_length = 0;        // tokenizer_config.json; 0 = left out
  std::string chat_template;           // "" = the spec's
  std::vector<int32_t> eos_token_ids;  // generation_config.json; empty = the spec's eos_id
};

// FAILED_PRECONDITION for an unknown byte-level pre-tokenizer name.
Result<std::vector<ExportedFile>> export_hf_tokenizer(const TokenizerSpec& spec,
                                                      const HfExportOptions& options);

}  // namespace llmserve
