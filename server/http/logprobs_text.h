// Logprobs written straight to JSON text, without a nlohmann::json tree: a prompt scored with
// top-20 over thousands of tokens is millions of entries, and a tree of them costs ~20x the text.
// Token strings are escaped once per id (TokenTexts), numbers written as nlohmann writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>

#include "engine/generate_request.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

// A token's text (the tokenizer's bytes, or the id when there is no tokenizer) and its JSON
// string, memoized per id.
class TokenTexts {
 public:
  explicit TokenTexts(const Tokenizer* tokenizer) : tokenizer_(tokenizer) {}
  std::string bytes(int32_t id) const;
  const std::string& json_string(int32_t id);  // quoted and escaped (invalid UTF-8 replaced)

 private:
  const Tokenizer* tokenizer_;
  std::unordered_map<int32_t, std::string> json_;
};

// A JSON number as nlohmann::json dumps a double (shortest round trip; "null" when not finite).
void append_json_number(std::string* out, double v);

// vLLM's prompt_logprobs list: null for the first prompt token, then per position an object
// {"<id>": {"logprob", "rank", "decoded_token"}}, the scored token first, then the top `top_n`.
void append_prompt_logprobs(std::string* out, std::span<const TokenLogprob> lps, size_t top_n,
                            TokenTexts& texts);

// One run of tokens of a legacy (completions) logprobs object.
struct LegacyLogprobsPart {
  std::span<const TokenLogprob> lps;
  std::span<const size_t> offsets;  // text_offset per token; missing ones count as 0
  size_t offset_shift = 0;          // added to every offset
  size_t top_n = SIZE_MAX;          // top lists cut to this many
};

// The legacy object {"tokens", "token_logprobs", "top_logprobs", "text_offset"} of the parts in
// order; `first_token` (echo: the prompt's first token) leads with null logprobs at offset 0.
void append_legacy_logprobs(std::string* out, std::span<const LegacyLogprobsPart> parts,
                            const std::string* first_token, TokenTexts& texts);

}  // namespace llmserve
