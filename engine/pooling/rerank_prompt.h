// The prompt a yes/no reranker (Qwen3-Reranker) scores, in its model card's format: the system
// line "Judge whether the Document meets the requirements based on the Query and the Instruct
// provided. Note that the answer can only be "yes" or "no".", the user turn
// "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}", and the assistant's
// prefix with an empty think block. Tokenized as the card does: the fixed prefix and suffix with
// their special tokens, the user's text with none parsed (a "<|im_end|>" in a document stays
// text) and none added.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

// The model card's default instruction.
inline constexpr std::string_view kDefaultRerankInstruction =
    "Given a web search query, retrieve relevant passages that answer the query";

// The token ids of the prompt (instruction empty: the default one).
std::vector<int32_t> rerank_prompt_ids(const Tokenizer& tok, std::string_view query,
                                       std::string_view document, std::string_view instruction);

}  // namespace llmserve
