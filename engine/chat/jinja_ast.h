// The syntax tree of a parsed Jinja template: expressions and statements, each with the line and
// column of its first token for error messages.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat/jinja_value.h"

namespace llmserve::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kConst,    // value
    kName,     // name
    kList,     // args
    kTuple,    // args
    kDict,     // pairs
    kGetAttr,  // a[0] . name
    kGetItem,  // a[0] [ a[1] ]
    kSlice,    // a[0] [ a[1] : a[2] : a[3] ] (null children for missing parts)
    kCall,     // a[0] ( args, kwargs )
    kFilter,   // a[0] | name ( args, kwargs )
    kTest,     // a[0] is [not] name ( args )
    kUnary,    // op a[0]: "not", "-", "+"
    kBinary,   // a[0] op a[1]
    kCond,     // a[0] if a[1] else a[2] (a[2] may be null)
  };
  Kind kind = Kind::kConst;
  int line = 0, col = 0;
  Value value;
  std::string name;  // identifier, attribute, filter / test name or operator
  bool negated = false;
  std::vector<ExprPtr> args;  // operands or positional arguments
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::pair<ExprPtr, ExprPtr>> pairs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Target of a for / set: names (a tuple when more than one), or namespace attribute `ns.attr`.
struct Target {
  std::vector<std::string> names;
  std::string attr;  // non-empty: names[0].attr
};

struct Stmt {
  enum class Kind {
    kText,       // text
    kPrint,      // expr
    kIf,         // branches (cond, body), else_body
    kFor,        // target in expr [if cond] body [else else_body]
    kSet,        // target = expr
    kSetBlock,   // target = rendered body (then optional filter expr applied)
    kMacro,      // name(params) body
    kCallBlock,  // {% call expr %} body {% endcall %}: expr is the call, body is `caller()`
    kBreak,
    kContinue,
    kScope,        // body rendered in place (generation / filter blocks)
    kFilterBlock,  // body rendered, then filter chain `expr` applied with input name "__body__"
  };
  Kind kind = Kind::kText;
  int line = 0, col = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  Target target;
  Body body;
  Body else_body;
  std::vector<std::pair<ExprPtr, Body>> branches;
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters with defaults
  bool recursive = false;
};

}  // namespace llmserve::jinja
