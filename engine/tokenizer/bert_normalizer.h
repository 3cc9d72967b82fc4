// BERT's text pipeline before WordPiece, as HF tokenizers' BertNormalizer + BertPreTokenizer do
// it (Unicode properties from ICU): clean_text drops NUL, U+FFFD and other control / format /
// unassigned / private-use characters and maps whitespace to ' '; chinese_chars puts spaces
// around CJK ideographs; strip_accents decomposes (NFD) and drops non-spacing marks; lowercase
// maps each character to its full lowercase. Then the text splits on whitespace, and every
// punctuation character (ASCII punctuation or Unicode P*) becomes a word of its own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

// The words of `text` (UTF-8; ill-formed bytes read as U+FFFD), normalized, in order.
std::vector<std::string> bert_words(std::string_view text, const TokenizerSpec::WordPiece& o);

}  // namespace llmserve
