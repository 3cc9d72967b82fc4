// Internal to the Jinja parser (jinja_parser.cpp: statements, jinja_parser_expr.cpp:
// expressions): a recursive-descent parser over the token list, following jinja2's grammar.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_lexer.h"
#include "engine/chat/jinja_parser.h"

namespace llmserve::jinja {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Result<Body> parse_all() {
    std::string end;
    LLMSERVE_ASSIGN_OR_RETURN(Body body, parse_body({}, &end));
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t k = 1) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool is_op(std::string_view op) const {
    return cur().type == TokenType::kOp && cur().value == op;
  }
  bool is_name(std::string_view n) const {
    return cur().type == TokenType::kName && cur().value == n;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    advance();
    return true;
  }

  Status error_at(const Token& t, const std::string& msg,
                  StatusCode code = StatusCode::kInvalidArgument) const {
    return Status(code, "chat template syntax error at line " + std::to_string(t.line) +
                            ", column " + std::to_string(t.col) + ": " + msg);
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::kEof:
        return "end of template";
      case TokenType::kVarEnd:
        return "'}}'";
      case TokenType::kBlockEnd:
        return "'%}'";
      case TokenType::kText:
        return "template text";
      default:
        return "'" + t.value + "'";
    }
  }
  Status expect_op(std::string_view op) {
    if (skip_op(op)) return Status::ok();
    return error_at(cur(), "expected '" + std::string(op) + "', got " + describe(cur()));
  }
  Status expect_block_end() {
    if (cur().type == TokenType::kBlockEnd) {
      advance();
      return Status::ok();
    }
    return error_at(cur(), "expected end of statement block, got " + describe(cur()));
  }
  Result<std::string> expect_name() {
    if (cur().type != TokenType::kName)
      return error_at(cur(), "expected a name, got " + describe(cur()));
    std::string n = cur().value;
    advance();
    return n;
  }

  struct DepthGuard {
    explicit DepthGuard(int& d) : d_(d) { ++d_; }
    ~DepthGuard() { --d_; }
    int& d_;
  };
  Status check_depth() const {
    if (depth_ > kMaxParseDepth) {
      return Status(StatusCode::kResourceExhausted,
                    "chat template syntax error at line " + std::to_string(cur().line) +
                        ": nesting deeper than the limit of " + std::to_string(kMaxParseDepth));
    }
    return Status::ok();
  }

  ExprPtr node(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->col = at.col;
    return e;
  }

  // ---- statements ----
  Result<Body> parse_body(std::initializer_list<std::string_view> ends, std::string* end);
  Result<StmtPtr> parse_statement();
  Status parse_params(std::vector<std::pair<std::string, ExprPtr>>& params);
  Result<Target> parse_target(bool allow_namespace);
  // ---- expressions ----
  bool is_tuple_end(std::initializer_list<std::string_view> extra_end) const;
  Result<ExprPtr> parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                              bool explicit_parens = false);
  Result<ExprPtr> parse_expression(bool with_condexpr);
  ExprPtr binary(std::string op, ExprPtr l, ExprPtr r, const Token& at);
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> parse_math1();
  Result<ExprPtr> parse_concat();
  Result<ExprPtr> parse_math2();
  Result<ExprPtr> parse_pow();
  Result<ExprPtr> parse_unary(bool with_filter);
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_postfix(ExprPtr e);
  Result<ExprPtr> parse_subscript(ExprPtr obj, const Token& at);
  Status parse_call_args(Expr& e);
  Result<ExprPtr> parse_call(ExprPtr callee);
  Result<ExprPtr> parse_filter_expr(ExprPtr e);
  Result<ExprPtr> parse_filter(ExprPtr e, bool start_inline = false);
  Result<ExprPtr> parse_test(ExprPtr e);

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace llmserve::jinja
