// Expressions, by precedence from the loosest: conditional, or, and, not, comparisons, + -, ~,
// * / // %, **, unary - +, then postfix (.attr, [index], (call)), filters and tests.
#include <charconv>
#include <cstdlib>

#include "engine/chat/jinja_parser_internal.h"

namespace llmserve::jinja {

Result<ExprPtr> Parser::parse_tuple(bool with_condexpr,
                                    std::initializer_list<std::string_view> extra_end,
                                    bool explicit_parens) {
  const Token& start = cur();
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) {
      if (!skip_op(",")) break;
      is_tuple = true;
    }
    if (is_tuple_end(extra_end)) break;
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr e, parse_expression(with_condexpr));
    items.push_back(std::move(e));
    if (!is_op(",")) break;
  }
  if (!is_tuple && items.size() == 1) return std::move(items[0]);
  if (items.empty() && !explicit_parens)
    return error_at(cur(), "expected an expression, got " + describe(cur()));
  auto t = node(Expr::Kind::kTuple, start);
  t->args = std::move(items);
  return t;
}

bool Parser::is_tuple_end(std::initializer_list<std::string_view> extra_end) const {
  TokenType t = cur().type;
  if (t == TokenType::kVarEnd || t == TokenType::kBlockEnd || t == TokenType::kEof) return true;
  if (is_op(")")) return true;
  for (auto e : extra_end) {
    if (is_name(e)) return true;
  }
  return false;
}

Result<ExprPtr> Parser::parse_expression(bool with_condexpr) {
  DepthGuard guard(depth_);
  LLMSERVE_RETURN_IF_ERROR(check_depth());
  if (!with_condexpr) return parse_or();
  LLMSERVE_ASSIGN_OR_RETURN(ExprPtr expr, parse_or());
  while (is_name("if")) {
    const Token& at = cur();
    advance();
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr cond, parse_or());
    ExprPtr otherwise;
    if (skip_name("else")) {
      LLMSERVE_ASSIGN_OR_RETURN(otherwise, parse_expression(true));
    }
    auto c = node(Expr::Kind::kCond, at);
    c->args.push_back(std::move(expr));
    c->args.push_back(std::move(cond));
    c->args.push_back(std::move(otherwise));
    expr = std::move(c);
  }
  return expr;
}

ExprPtr Parser::binary(std::string op, ExprPtr l, ExprPtr r, const Token& at) {
  auto b = node(Expr::Kind::kBinary, at);
  b->name = std::move(op);
  b->args.push_back(std::move(l));
  b->args.push_back(std::move(r));
  return b;
}

Result<ExprPtr> Parser::parse_or() {
  LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
  while (is_name("or")) {
    const Token& at = cur();
    advance();
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
    left = binary("or", std::move(left), std::move(right), at);
  }
  return left;
}

Result<ExprPtr> Parser::parse_and() {
  LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
  while (is_name("and")) {
    const Token& at = cur();
    advance();
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
    left = binary("and", std::move(left), std::move(right), at);
  }
  return left;
}

Result<ExprPtr> Parser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(depth_);
    LLMSERVE_RETURN_IF_ERROR(check_depth());
    const Token& at = cur();
    advance();
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
    auto u = node(Expr::Kind::kUnary, at);
    u->name = "not";
    u->args.push_back(std::move(operand));
    return u;
  }
  return parse_compare();
}

Result<ExprPtr> Parser::parse_compare() {
  LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_math1());
  while (true) {
    const Token& at = cur();
    std::string op;
    if (at.type == TokenType::kOp && (at.value == "==" || at.value == "!=" || at.value == "<" ||
                                      at.value == ">" || at.value == "<=" || at.value == ">=")) {
      op = at.value;
      advance();
    } else if (is_name("in")) {
      op = "in";
      advance();
    } else if (is_name("not") && peek().type == TokenType::kName && peek().value == "in") {
      op = "notin";
      advance();
      advance();
    } else {
      break;
    }
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr right, parse_math1());
    left = binary(op, std::move(left), std::move(right), at);
  }
  return left;
}

Result<ExprPtr> Parser::parse_math1() {
  LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
  while (is_op("+") || is_op("-")) {
    const Token& at = cur();
    std::string op = at.value;
    advance();
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
    left = binary(op, std::move(left), std::move(right), at);
  }
  return left;
}

Result<ExprPtr> Parser::parse_concat() {
  LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
  while (is_op("~")) {
    const Token& at = cur();
    advance();
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
    left = binary("~", std::move(left), std::move(right), at);
  }
  return left;
}

Result<ExprPtr> Parser::parse_math2() {
  LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& at = cur();
    std::string op = at.value;
    advance();
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
    left = binary(op, std::move(left), std::move(right), at);
  }
  return left;
}

Result<ExprPtr> Parser::parse_pow() {
  LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
  while (is_op("**")) {
    const Token& at = cur();
    advance();
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
    left = binary("**", std::move(left), std::move(right), at);
  }
  return left;
}

Result<ExprPtr> Parser::parse_unary(bool with_filter) {
  DepthGuard guard(depth_);
  LLMSERVE_RETURN_IF_ERROR(check_depth());
  ExprPtr e;
  if (is_op("-") || is_op("+")) {
    const Token& at = cur();
    std::string op = at.value;
    advance();
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
    e = node(Expr::Kind::kUnary, at);
    e->name = op;
    e->args.push_back(std::move(operand));
  } else {
    LLMSERVE_ASSIGN_OR_RETURN(e, parse_primary());
  }
  LLMSERVE_ASSIGN_OR_RETURN(e, parse_postfix(std::move(e)));
  if (with_filter) {
    LLMSERVE_ASSIGN_OR_RETURN(e, parse_filter_expr(std::move(e)));
  }
  return e;
}

Result<ExprPtr> Parser::parse_primary() {
  const Token& t = cur();
  switch (t.type) {
    case TokenType::kName: {
      auto e = node(Expr::Kind::kConst, t);
      if (t.value == "true" || t.value == "True")
        e->value = Value(true);
      else if (t.value == "false" || t.value == "False")
        e->value = Value(false);
      else if (t.value == "none" || t.value == "None")
        e->value = Value::none();
      else {
        e->kind = Expr::Kind::kName;
        e->name = t.value;
      }
      advance();
      return e;
    }
    case TokenType::kString: {
      auto e = node(Expr::Kind::kConst, t);
      std::string s;
      while (cur().type == TokenType::kString) {
        s += cur().value;
        advance();
      }
      e->value = Value(std::move(s));
      return e;
    }
    case TokenType::kInt: {
      auto e = node(Expr::Kind::kConst, t);
      int64_t v = 0;
      auto res = std::from_chars(t.value.data(), t.value.data() + t.value.size(), v);
      if (res.ec != std::errc())
        e->value = Value(std::strtod(t.value.c_str(), nullptr));
      else
        e->value = Value(v);
      advance();
      return e;
    }
    case TokenType::kFloat: {
      auto e = node(Expr::Kind::kConst, t);
      e->value = Value(std::strtod(t.value.c_str(), nullptr));
      advance();
      return e;
    }
    case TokenType::kOp: {
      if (t.value == "(") {
        advance();
        LLMSERVE_ASSIGN_OR_RETURN(ExprPtr e, parse_tuple(true, {}, true));
        LLMSERVE_RETURN_IF_ERROR(expect_op(")"));
        return e;
      }
      if (t.value == "[") {
        advance();
        auto e = node(Expr::Kind::kList, t);
        while (!is_op("]")) {
          if (!e->args.empty()) LLMSERVE_RETURN_IF_ERROR(expect_op(","));
          if (is_op("]")) break;
          LLMSERVE_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(true));
          e->args.push_back(std::move(item));
        }
        advance();
        return e;
      }
      if (t.value == "{") {
        advance();
        auto e = node(Expr::Kind::kDict, t);
        while (!is_op("}")) {
          if (!e->pairs.empty()) LLMSERVE_RETURN_IF_ERROR(expect_op(","));
          if (is_op("}")) break;
          LLMSERVE_ASSIGN_OR_RETURN(ExprPtr key, parse_expression(true));
          LLMSERVE_RETURN_IF_ERROR(expect_op(":"));
          LLMSERVE_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
          e->pairs.emplace_back(std::move(key), std::move(value));
        }
        advance();
        return e;
      }
      break;
    }
    default:
      break;
  }
  return error_at(t, "unexpected " + describe(t));
}

Result<ExprPtr> Parser::parse_postfix(ExprPtr e) {
  while (true) {
    if (is_op(".")) {
      const Token& at = cur();
      advance();
      if (cur().type == TokenType::kName) {
        auto g = node(Expr::Kind::kGetAttr, at);
        g->name = cur().value;
        g->args.push_back(std::move(e));
        e = std::move(g);
        advance();
      } else if (cur().type == TokenType::kInt) {
        auto g = node(Expr::Kind::kGetItem, at);
        auto idx = node(Expr::Kind::kConst, cur());
        idx->value = Value(static_cast<int64_t>(std::strtoll(cur().value.c_str(), nullptr, 10)));
        g->args.push_back(std::move(e));
        g->args.push_back(std::move(idx));
        e = std::move(g);
        advance();
      } else {
        return error_at(cur(), "expected an attribute name, got " + describe(cur()));
      }
    } else if (is_op("[")) {
      const Token& at = cur();
      advance();
      LLMSERVE_ASSIGN_OR_RETURN(e, parse_subscript(std::move(e), at));
      LLMSERVE_RETURN_IF_ERROR(expect_op("]"));
    } else if (is_op("(")) {
      LLMSERVE_ASSIGN_OR_RETURN(e, parse_call(std::move(e)));
    } else {
      return e;
    }
  }
}

Result<ExprPtr> Parser::parse_subscript(ExprPtr obj, const Token& at) {
  ExprPtr parts[3];
  if (!is_op(":")) {
    LLMSERVE_ASSIGN_OR_RETURN(parts[0], parse_expression(true));
    if (!is_op(":")) {
      auto g = node(Expr::Kind::kGetItem, at);
      g->args.push_back(std::move(obj));
      g->args.push_back(std::move(parts[0]));
      return g;
    }
  }
  advance();  // ':'
  if (!is_op(":") && !is_op("]")) {
    LLMSERVE_ASSIGN_OR_RETURN(parts[1], parse_expression(true));
  }
  if (skip_op(":") && !is_op("]")) {
    LLMSERVE_ASSIGN_OR_RETURN(parts[2], parse_expression(true));
  }
  auto s = node(Expr::Kind::kSlice, at);
  s->args.push_back(std::move(obj));
  for (auto& p : parts) s->args.push_back(std::move(p));
  return s;
}

Status Parser::parse_call_args(Expr& e) {
  LLMSERVE_RETURN_IF_ERROR(expect_op("("));
  bool first = true;
  while (!is_op(")")) {
    if (!first) LLMSERVE_RETURN_IF_ERROR(expect_op(","));
    first = false;
    if (is_op(")")) break;
    if (is_op("*") || is_op("**")) {
      return error_at(cur(), "*args / **kwargs calls are not supported",
                      StatusCode::kUnimplemented);
    }
    if (cur().type == TokenType::kName && peek().type == TokenType::kOp && peek().value == "=") {
      std::string key = cur().value;
      advance();
      advance();
      LLMSERVE_ASSIGN_OR_RETURN(ExprPtr v, parse_expression(true));
      e.kwargs.emplace_back(std::move(key), std::move(v));
    } else {
      if (!e.kwargs.empty()) return error_at(cur(), "positional argument after keyword argument");
      LLMSERVE_ASSIGN_OR_RETURN(ExprPtr v, parse_expression(true));
      e.args.push_back(std::move(v));
    }
  }
  advance();
  return Status::ok();
}

Result<ExprPtr> Parser::parse_call(ExprPtr callee) {
  auto c = node(Expr::Kind::kCall, cur());
  c->args.push_back(std::move(callee));
  LLMSERVE_RETURN_IF_ERROR(parse_call_args(*c));
  return c;
}

Result<ExprPtr> Parser::parse_filter_expr(ExprPtr e) {
  while (true) {
    if (is_op("|")) {
      LLMSERVE_ASSIGN_OR_RETURN(e, parse_filter(std::move(e)));
    } else if (is_name("is")) {
      LLMSERVE_ASSIGN_OR_RETURN(e, parse_test(std::move(e)));
    } else if (is_op("(")) {
      LLMSERVE_ASSIGN_OR_RETURN(e, parse_call(std::move(e)));
    } else {
      return e;
    }
  }
}

Result<ExprPtr> Parser::parse_filter(ExprPtr e, bool start_inline) {
  while (is_op("|") || start_inline) {
    if (!start_inline) advance();
    start_inline = false;
    const Token& at = cur();
    LLMSERVE_ASSIGN_OR_RETURN(std::string name, expect_name());
    while (is_op(".")) {
      advance();
      LLMSERVE_ASSIGN_OR_RETURN(std::string part, expect_name());
      name += "." + part;
    }
    auto f = node(Expr::Kind::kFilter, at);
    f->name = std::move(name);
    f->args.push_back(std::move(e));
    if (is_op("(")) LLMSERVE_RETURN_IF_ERROR(parse_call_args(*f));
    e = std::move(f);
  }
  return e;
}

Result<ExprPtr> Parser::parse_test(ExprPtr e) {
  const Token& at = cur();
  advance();  // 'is'
  bool negated = skip_name("not");
  LLMSERVE_ASSIGN_OR_RETURN(std::string name, expect_name());
  while (is_op(".")) {
    advance();
    LLMSERVE_ASSIGN_OR_RETURN(std::string part, expect_name());
    name += "." + part;
  }
  auto t = node(Expr::Kind::kTest, at);
  t->name = std::move(name);
  t->negated = negated;
  t->args.push_back(std::move(e));
  const Token& c = cur();
  bool arg_start = c.type == TokenType::kName || c.type == TokenType::kString ||
                   c.type == TokenType::kInt || c.type == TokenType::kFloat ||
                   (c.type == TokenType::kOp && (c.value == "[" || c.value == "{"));
  if (is_op("(")) {
    LLMSERVE_RETURN_IF_ERROR(parse_call_args(*t));
  } else if (arg_start && !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) return error_at(c, "you cannot chain multiple tests with 'is'");
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
    LLMSERVE_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
    t->args.push_back(std::move(arg));
  }
  return t;
}
}  // namespace llmserve::jinja
