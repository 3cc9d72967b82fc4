#include <charconv>
#include <cstdlib>

#include "engine/chat/jinja_parser.h"
#include "engine/chat/jinja_parser_internal.h"

namespace llmserve::jinja {

Result<Body> Parser::parse_body(std::initializer_list<std::string_view> ends, std::string* end) {
  DepthGuard guard(depth_);
  LLMSERVE_RETURN_IF_ERROR(check_depth());
  Body body;
  while (true) {
    const Token& t = cur();
    if (t.type == TokenType::kEof) {
      if (ends.size() == 0) return body;
      std::string expected;
      for (auto e : ends) expected += (expected.empty() ? "'" : " or '") + std::string(e) + "'";
      return error_at(t, "unexpected end of template, expected " + expected);
    }
    if (t.type == TokenType::kText) {
      auto s = std::make_unique<Stmt>();
      s->kind = Stmt::Kind::kText;
      s->text = t.value;
      body.push_back(std::move(s));
      advance();
    } else if (t.type == TokenType::kVarBegin) {
      auto s = std::make_unique<Stmt>();
      s->kind = Stmt::Kind::kPrint;
      s->line = t.line;
      s->col = t.col;
      advance();
      LLMSERVE_ASSIGN_OR_RETURN(s->expr, parse_tuple(true, {}));
      if (cur().type != TokenType::kVarEnd) {
        return error_at(cur(), "expected '}}', got " + describe(cur()));
      }
      advance();
      body.push_back(std::move(s));
    } else if (t.type == TokenType::kBlockBegin) {
      const Token& name = peek();
      if (name.type == TokenType::kName) {
        for (auto e : ends) {
          if (name.value == e) {
            advance();
            advance();
            *end = name.value;
            return body;
          }
        }
      }
      advance();
      LLMSERVE_ASSIGN_OR_RETURN(StmtPtr s, parse_statement());
      body.push_back(std::move(s));
    } else {
      return error_at(t, "unexpected " + describe(t));
    }
  }
}

Result<StmtPtr> Parser::parse_statement() {
  const Token& t = cur();
  if (t.type != TokenType::kName) return error_at(t, "tag name expected, got " + describe(t));
  auto s = std::make_unique<Stmt>();
  s->line = t.line;
  s->col = t.col;
  std::string tag = t.value;
  advance();
  std::string end;
  if (tag == "if") {
    s->kind = Stmt::Kind::kIf;
    while (true) {
      LLMSERVE_ASSIGN_OR_RETURN(ExprPtr cond, parse_tuple(false, {}));
      LLMSERVE_RETURN_IF_ERROR(expect_block_end());
      LLMSERVE_ASSIGN_OR_RETURN(Body body, parse_body({"elif", "else", "endif"}, &end));
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (end != "elif") break;
    }
    if (end == "else") {
      LLMSERVE_RETURN_IF_ERROR(expect_block_end());
      LLMSERVE_ASSIGN_OR_RETURN(s->else_body, parse_body({"endif"}, &end));
    }
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
  } else if (tag == "for") {
    s->kind = Stmt::Kind::kFor;
    LLMSERVE_ASSIGN_OR_RETURN(s->target, parse_target(false));
    if (!skip_name("in")) return error_at(cur(), "expected 'in', got " + describe(cur()));
    LLMSERVE_ASSIGN_OR_RETURN(s->expr, parse_tuple(false, {"recursive", "if"}));
    if (skip_name("if")) {
      LLMSERVE_ASSIGN_OR_RETURN(s->cond, parse_expression(true));
    }
    if (skip_name("recursive")) s->recursive = true;
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
    LLMSERVE_ASSIGN_OR_RETURN(s->body, parse_body({"else", "endfor"}, &end));
    if (end == "else") {
      LLMSERVE_RETURN_IF_ERROR(expect_block_end());
      LLMSERVE_ASSIGN_OR_RETURN(s->else_body, parse_body({"endfor"}, &end));
    }
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
  } else if (tag == "set") {
    LLMSERVE_ASSIGN_OR_RETURN(s->target, parse_target(true));
    if (skip_op("=")) {
      s->kind = Stmt::Kind::kSet;
      LLMSERVE_ASSIGN_OR_RETURN(s->expr, parse_tuple(true, {}));
      LLMSERVE_RETURN_IF_ERROR(expect_block_end());
    } else {
      s->kind = Stmt::Kind::kSetBlock;
      if (is_op("|")) {
        auto input = node(Expr::Kind::kName, cur());
        input->name = "__body__";
        LLMSERVE_ASSIGN_OR_RETURN(s->expr, parse_filter(std::move(input)));
      }
      LLMSERVE_RETURN_IF_ERROR(expect_block_end());
      LLMSERVE_ASSIGN_OR_RETURN(s->body, parse_body({"endset"}, &end));
      LLMSERVE_RETURN_IF_ERROR(expect_block_end());
    }
  } else if (tag == "macro") {
    s->kind = Stmt::Kind::kMacro;
    LLMSERVE_ASSIGN_OR_RETURN(s->name, expect_name());
    LLMSERVE_RETURN_IF_ERROR(parse_params(s->params));
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
    LLMSERVE_ASSIGN_OR_RETURN(s->body, parse_body({"endmacro"}, &end));
    if (cur().type == TokenType::kName) advance();  // {% endmacro name %}
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
  } else if (tag == "call") {
    s->kind = Stmt::Kind::kCallBlock;
    if (is_op("(")) LLMSERVE_RETURN_IF_ERROR(parse_params(s->params));
    LLMSERVE_ASSIGN_OR_RETURN(s->expr, parse_expression(true));
    if (s->expr->kind != Expr::Kind::kCall) return error_at(t, "expected a call in {% call %}");
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
    LLMSERVE_ASSIGN_OR_RETURN(s->body, parse_body({"endcall"}, &end));
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
  } else if (tag == "filter") {
    s->kind = Stmt::Kind::kFilterBlock;
    auto input = node(Expr::Kind::kName, cur());
    input->name = "__body__";
    LLMSERVE_ASSIGN_OR_RETURN(s->expr, parse_filter(std::move(input), true));
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
    LLMSERVE_ASSIGN_OR_RETURN(s->body, parse_body({"endfilter"}, &end));
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
  } else if (tag == "generation") {
    s->kind = Stmt::Kind::kScope;
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
    LLMSERVE_ASSIGN_OR_RETURN(s->body, parse_body({"endgeneration"}, &end));
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
  } else if (tag == "break" || tag == "continue") {
    s->kind = tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
    LLMSERVE_RETURN_IF_ERROR(expect_block_end());
  } else {
    return error_at(t, "unsupported tag '" + tag + "'", StatusCode::kUnimplemented);
  }
  return s;
}

Status Parser::parse_params(std::vector<std::pair<std::string, ExprPtr>>& params) {
  LLMSERVE_RETURN_IF_ERROR(expect_op("("));
  while (!is_op(")")) {
    if (!params.empty()) LLMSERVE_RETURN_IF_ERROR(expect_op(","));
    if (is_op(")")) break;
    LLMSERVE_ASSIGN_OR_RETURN(std::string n, expect_name());
    ExprPtr def;
    if (skip_op("=")) {
      LLMSERVE_ASSIGN_OR_RETURN(def, parse_expression(true));
    }
    params.emplace_back(std::move(n), std::move(def));
  }
  advance();
  return Status::ok();
}

Result<Target> Parser::parse_target(bool allow_namespace) {
  Target target;
  bool paren = skip_op("(");
  while (true) {
    LLMSERVE_ASSIGN_OR_RETURN(std::string n, expect_name());
    if (allow_namespace && target.names.empty() && is_op(".")) {
      advance();
      LLMSERVE_ASSIGN_OR_RETURN(target.attr, expect_name());
      target.names.push_back(std::move(n));
      return target;
    }
    target.names.push_back(std::move(n));
    if (!skip_op(",")) break;
    if (cur().type != TokenType::kName) break;
  }
  if (paren) LLMSERVE_RETURN_IF_ERROR(expect_op(")"));
  return target;
}
Result<Body> parse_template(std::string_view source) {
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
  return Parser(std::move(tokens)).parse_all();
}

}  // namespace llmserve::jinja
