// Jinja lexer with the settings Hugging Face uses for chat templates (trim_blocks=True,
// lstrip_blocks=True, keep_trailing_newline=False): splits a template into text and tag tokens,
// applying whitespace control ({%- -%} {{- -}} {#- -#}, '+' to opt out). Comments are dropped;
// {% raw %} blocks become text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace llmserve::jinja {

enum class TokenType {
  kText,
  kVarBegin,
  kVarEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInt,
  kFloat,
  kOp,
  kEof
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string value;  // text, name, unescaped string, number literal or operator
  int line = 1;
  int col = 1;
};

// Errors are kInvalidArgument naming the line and column.
Result<std::vector<Token>> tokenize(std::string_view source);

}  // namespace llmserve::jinja
