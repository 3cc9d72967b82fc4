// The vocabulary of an HF tokenizer.json, whatever its model type.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

// tokenizer.json's model.vocab (an object text -> id) and added_tokens into spec->tokens and
// spec->token_types: ids nothing names (or an empty text) are kUnused, vocab entries kNormal, added
// tokens kControl when "special" else kUserDefined. Ids must lie in [0, 2^26). Returns text -> id,
// added tokens included. Precondition: tok["model"] is an object.
Result<std::unordered_map<std::string, int32_t>> read_hf_vocab(const nlohmann::json& tok,
                                                               TokenizerSpec* spec);

}  // namespace llmserve
