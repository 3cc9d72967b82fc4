#include "engine/chat/jinja_parser.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>

#include "engine/chat/jinja_lexer.h"

namespace llmserve::jinja {
namespace {

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
  const Token& peek(size_t k = 1) const {
    return toks_[std::min(pos_ + k, toks_.size() - 1)];
  }
  void advance() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool is_op(std::string_view op) const { return cur().type == TokenType::kOp && cur().value == op; }
  bool is_name(std::string_view n) const { return cur().type == TokenType::kName && cur().value == n; }
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

  Status error_at(const Token& t, const std::string& msg, StatusCode code = StatusCode::kInvalidArgument) const {
    return Status(code, "chat template syntax error at line " + std::to_string(t.line) + ", column " +
                            std::to_string(t.col) + ": " + msg);
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::kEof: return "end of template";
      case TokenType::kVarEnd: return "'}}'";
      case TokenType::kBlockEnd: return "'%}'";
      case TokenType::kText: return "template text";
      default: return "'" + t.value + "'";
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
    if (cur().type != TokenType::kName) return error_at(cur(), "expected a name, got " + describe(cur()));
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
  // Parses until `{% <one of ends>` (consumed, name stored in *end) or the end of input.
  Result<Body> parse_body(std::initializer_list<std::string_view> ends, std::string* end) {
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

  Result<StmtPtr> parse_statement() {
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

  Status parse_params(std::vector<std::pair<std::string, ExprPtr>>& params) {
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

  Result<Target> parse_target(bool allow_namespace) {
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

  // ---- expressions ----
  bool is_tuple_end(std::initializer_list<std::string_view> extra_end) const {
    TokenType t = cur().type;
    if (t == TokenType::kVarEnd || t == TokenType::kBlockEnd || t == TokenType::kEof) return true;
    if (is_op(")")) return true;
    for (auto e : extra_end) {
      if (is_name(e)) return true;
    }
    return false;
  }

  Result<ExprPtr> parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                              bool explicit_parens = false) {
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
    if (items.empty() && !explicit_parens) return error_at(cur(), "expected an expression, got " + describe(cur()));
    auto t = node(Expr::Kind::kTuple, start);
    t->args = std::move(items);
    return t;
  }

  Result<ExprPtr> parse_expression(bool with_condexpr) {
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

  ExprPtr binary(std::string op, ExprPtr l, ExprPtr r, const Token& at) {
    auto b = node(Expr::Kind::kBinary, at);
    b->name = std::move(op);
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return b;
  }

  Result<ExprPtr> parse_or() {
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
    while (is_name("or")) {
      const Token& at = cur();
      advance();
      LLMSERVE_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
      left = binary("or", std::move(left), std::move(right), at);
    }
    return left;
  }

  Result<ExprPtr> parse_and() {
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
    while (is_name("and")) {
      const Token& at = cur();
      advance();
      LLMSERVE_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
      left = binary("and", std::move(left), std::move(right), at);
    }
    return left;
  }

  Result<ExprPtr> parse_not() {
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

  Result<ExprPtr> parse_compare() {
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_math1());
    while (true) {
      const Token& at = cur();
      std::string op;
      if (at.type == TokenType::kOp &&
          (at.value == "==" || at.value == "!=" || at.value == "<" || at.value == ">" ||
           at.value == "<=" || at.value == ">=")) {
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

  Result<ExprPtr> parse_math1() {
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

  Result<ExprPtr> parse_concat() {
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
    while (is_op("~")) {
      const Token& at = cur();
      advance();
      LLMSERVE_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
      left = binary("~", std::move(left), std::move(right), at);
    }
    return left;
  }

  Result<ExprPtr> parse_math2() {
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

  Result<ExprPtr> parse_pow() {
    LLMSERVE_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
    while (is_op("**")) {
      const Token& at = cur();
      advance();
      LLMSERVE_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
      left = binary("**", std::move(left), std::move(right), at);
    }
    return left;
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
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

  Result<ExprPtr> parse_primary() {
    const Token& t = cur();
    switch (t.type) {
      case TokenType::kName: {
        auto e = node(Expr::Kind::kConst, t);
        if (t.value == "true" || t.value == "True") e->value = Value(true);
        else if (t.value == "false" || t.value == "False") e->value = Value(false);
        else if (t.value == "none" || t.value == "None") e->value = Value::none();
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
        if (res.ec != std::errc()) e->value = Value(std::strtod(t.value.c_str(), nullptr));
        else e->value = Value(v);
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
      default: break;
    }
    return error_at(t, "unexpected " + describe(t));
  }

  Result<ExprPtr> parse_postfix(ExprPtr e) {
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

  Result<ExprPtr> parse_subscript(ExprPtr obj, const Token& at) {
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

  Status parse_call_args(Expr& e) {
    LLMSERVE_RETURN_IF_ERROR(expect_op("("));
    bool first = true;
    while (!is_op(")")) {
      if (!first) LLMSERVE_RETURN_IF_ERROR(expect_op(","));
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) {
        return error_at(cur(), "*args / **kwargs calls are not supported", StatusCode::kUnimplemented);
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

  Result<ExprPtr> parse_call(ExprPtr callee) {
    auto c = node(Expr::Kind::kCall, cur());
    c->args.push_back(std::move(callee));
    LLMSERVE_RETURN_IF_ERROR(parse_call_args(*c));
    return c;
  }

  Result<ExprPtr> parse_filter_expr(ExprPtr e) {
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

  Result<ExprPtr> parse_filter(ExprPtr e, bool start_inline = false) {
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

  Result<ExprPtr> parse_test(ExprPtr e) {
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

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<Body> parse_template(std::string_view source) {
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
  return Parser(std::move(tokens)).parse_all();
}

}  // namespace llmserve::jinja
