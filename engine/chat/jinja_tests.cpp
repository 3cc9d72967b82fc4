// Jinja tests (`x is defined`, `x is divisibleby 3`) and Python-style argument binding.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_operators.h"

namespace llmserve::jinja {

Result<BoundArgs> BoundArgs::bind(std::string_view fn, CallArgs& args,
                                  std::initializer_list<std::string_view> params) {
  BoundArgs b;
  b.slots_.resize(params.size());
  if (args.positional.size() > params.size()) {
    return invalid_argument(std::string(fn) + "() takes at most " + std::to_string(params.size()) +
                            " argument(s) (" + std::to_string(args.positional.size()) + " given)");
  }
  for (size_t i = 0; i < args.positional.size(); ++i) b.slots_[i] = args.positional[i];
  for (auto& [k, v] : args.keywords) {
    auto it = std::find(params.begin(), params.end(), k);
    if (it == params.end()) {
      return invalid_argument(std::string(fn) + "() got an unexpected keyword argument '" + k +
                              "'");
    }
    size_t i = static_cast<size_t>(it - params.begin());
    if (b.slots_[i])
      return invalid_argument(std::string(fn) + "() got multiple values for argument '" + k + "'");
    b.slots_[i] = v;
  }
  return b;
}

namespace {

const char* const kTests[] = {"defined",  "undefined", "none", "string", "number",      "integer",
                              "float",    "boolean",   "true", "false",  "mapping",     "iterable",
                              "sequence", "callable",  "odd",  "even",   "divisibleby", "eq",
                              "equalto",  "==",        "ne",   "!=",     "lt",          "lessthan",
                              "<",        "le",        "<=",   "gt",     "greaterthan", ">",
                              "ge",       ">=",        "in",   "lower",  "upper",       "sameas",
                              "escaped",  "filter",    "test"};

Result<const Value*> one_arg(std::string_view name, CallArgs& args) {
  size_t n = args.positional.size() + args.keywords.size();
  if (n != 1)
    return invalid_argument("test '" + std::string(name) + "' takes exactly one argument");
  return args.positional.empty() ? &args.keywords[0].second : &args.positional[0];
}

bool all_chars(const std::string& s, int (*pred)(int), int (*opposite)(int)) {
  bool any = false;
  for (unsigned char c : s) {
    if (opposite(c)) return false;
    any |= pred(c) != 0;
  }
  return any;
}

}  // namespace

bool has_test(std::string_view name) {
  return std::any_of(std::begin(kTests), std::end(kTests),
                     [&](const char* t) { return name == t; });
}

Result<bool> apply_test(Evaluator& ev, std::string_view name, const Value& v, CallArgs& args) {
  (void)ev;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int() && !v.is_bool();
  if (name == "float") return v.is_float();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "callable") return v.is_callable();
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper") {
    std::string s = to_str(v);
    return name == "lower" ? all_chars(s, std::islower, std::isupper)
                           : all_chars(s, std::isupper, std::islower);
  }
  if (name == "odd" || name == "even") {
    if (!v.is_number())
      return invalid_argument("unsupported operand type(s) for %: '" + v.type_name() +
                              "' and 'int'");
    if (v.is_float()) {
      double m = std::fmod(v.as_double(), 2.0);
      if (m < 0) m += 2.0;
      return name == "odd" ? m == 1.0 : m == 0.0;
    }
    int64_t m = v.as_int() % 2;
    return name == "odd" ? m != 0 : m == 0;
  }
  if (name == "filter" || name == "test") {
    if (!v.is_string()) return false;
    return name == "filter" ? has_filter(v.str()) : has_test(v.str());
  }
  LLMSERVE_ASSIGN_OR_RETURN(const Value* arg, one_arg(name, args));
  if (name == "divisibleby") {
    LLMSERVE_ASSIGN_OR_RETURN(Value m, binary_op("%", v, *arg));
    return equals(m, Value(0));
  }
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, *arg);
  if (name == "ne" || name == "!=") return !equals(v, *arg);
  if (name == "sameas") {
    if (v.kind() != arg->kind()) return false;
    if (v.is_none() || v.is_undefined()) return true;
    if (v.is_bool()) return v.as_bool() == arg->as_bool();
    if (v.is_list()) return &v.items() == &arg->items();
    if (v.is_dict() || v.is_namespace()) return v.dict_ptr() == arg->dict_ptr();
    return equals(v, *arg);
  }
  if (name == "in") return contains(*arg, v);
  std::string_view op = name == "lt" || name == "lessthan"      ? "<"
                        : name == "le"                          ? "<="
                        : name == "gt" || name == "greaterthan" ? ">"
                        : name == "ge"                          ? ">="
                                                                : name;
  if (op == "<" || op == "<=" || op == ">" || op == ">=") {
    LLMSERVE_ASSIGN_OR_RETURN(Value r, binary_op(op, v, *arg));
    return r.as_bool();
  }
  return unimplemented("no test named '" + std::string(name) + "'");
}

}  // namespace llmserve::jinja
