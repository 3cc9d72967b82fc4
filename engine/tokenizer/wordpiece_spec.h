// The WordPiece spec of an HF tokenizer.json (the parsed file), for tokenizer_spec_hf.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

// tok: tokenizer.json whose model (an object) is WordPiece; cfg: tokenizer_config.json ({} when
// absent). BertNormalizer and BertPreTokenizer settings, [CLS] / [SEP] / [UNK] / [PAD] ids.
Result<TokenizerSpec> wordpiece_spec_from_hf_json(const nlohmann::json& tok,
                                                  const nlohmann::json& cfg);

}  // namespace llmserve
