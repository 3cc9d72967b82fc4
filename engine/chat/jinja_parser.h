// Jinja parser: tokens (jinja_lexer.h) to a statement list (jinja_ast.h), following jinja2's
// grammar and operator precedence. Nesting is limited (kMaxParseDepth) so hostile input cannot
// exhaust the stack.
#pragma once

#include <string_view>

#include "engine/chat/jinja_ast.h"
#include "engine/core/status.h"

namespace llmserve::jinja {

inline constexpr int kMaxParseDepth = 200;

// Errors: kInvalidArgument (syntax) or kUnimplemented (a valid construct this subset lacks),
// both naming the line and column.
Result<Body> parse_template(std::string_view source);

}  // namespace llmserve::jinja
