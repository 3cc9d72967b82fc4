#include "engine/chat/jinja_operators.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace llmserve::jinja {
namespace {

constexpr size_t kMaxRepeatBytes = size_t{1} << 30;

Status type_error(std::string_view op, const Value& l, const Value& r) {
  if (l.is_undefined()) return invalid_argument(l.str().empty() ? "value is undefined" : l.str());
  if (r.is_undefined()) return invalid_argument(r.str().empty() ? "value is undefined" : r.str());
  return invalid_argument("unsupported operand type(s) for " + std::string(op) + ": '" +
                          l.type_name() + "' and '" + r.type_name() + "'");
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t py_mod(int64_t a, int64_t b) {
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

Result<Value> repeat(const Value& seq, int64_t times) {
  if (times < 0) times = 0;
  // An empty sequence stays empty however many times it repeats (no loop over `times`).
  if (seq.is_string() && seq.str().empty()) return Value(std::string());
  if (!seq.is_string() && seq.items().empty()) times = 0;
  if (seq.is_string()) {
    if (!seq.str().empty() && static_cast<uint64_t>(times) > kMaxRepeatBytes / seq.str().size()) {
      return resource_exhausted("string repetition result too large");
    }
    std::string out;
    out.reserve(seq.str().size() * static_cast<size_t>(times));
    for (int64_t i = 0; i < times; ++i) out += seq.str();
    return Value(std::move(out));
  }
  size_t n = seq.items().size();
  if (n && static_cast<uint64_t>(times) > (size_t{1} << 24) / n) {
    return resource_exhausted("list repetition result too large");
  }
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return Value::list(std::move(out), seq.is_tuple());
}

Result<Value> arith(std::string_view op, const Value& l, const Value& r) {
  bool ints = l.is_int() && r.is_int();
  if (ints) {
    int64_t a = l.as_int(), b = r.as_int(), out = 0;
    if (op == "+" && !__builtin_add_overflow(a, b, &out)) return Value(out);
    if (op == "-" && !__builtin_sub_overflow(a, b, &out)) return Value(out);
    if (op == "*" && !__builtin_mul_overflow(a, b, &out)) return Value(out);
    if (op == "//" || op == "%") {
      if (b == 0) return invalid_argument("integer division or modulo by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1)
        return out_of_range("integer overflow");
      return Value(op == "//" ? floor_div(a, b) : py_mod(a, b));
    }
    if (op == "**" && b >= 0) {
      int64_t acc = 1;
      bool overflow = false;
      for (int64_t i = 0; i < b && !overflow; ++i) {
        overflow = __builtin_mul_overflow(acc, a, &acc);
        if (acc == 0 || acc == 1) break;
      }
      if (!overflow) {
        if (acc == 1 && a == -1 && b % 2 == 1) acc = -1;
        return Value(acc);
      }
    }
    if (op != "/" && op != "**")
      return out_of_range("integer overflow in '" + std::string(op) + "'");
  }
  double a = l.as_double(), b = r.as_double();
  if (op == "+") return Value(a + b);
  if (op == "-") return Value(a - b);
  if (op == "*") return Value(a * b);
  if (op == "/") {
    if (b == 0) return invalid_argument("division by zero");
    return Value(a / b);
  }
  if (op == "//") {
    if (b == 0) return invalid_argument("float floor division by zero");
    return Value(std::floor(a / b));
  }
  if (op == "%") {
    if (b == 0) return invalid_argument("float modulo");
    double m = std::fmod(a, b);
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return Value(m);
  }
  if (op == "**") {
    if (a == 0 && b < 0) return invalid_argument("0.0 cannot be raised to a negative power");
    return Value(std::pow(a, b));
  }
  return internal_error("unknown arithmetic operator");
}

}  // namespace

Result<bool> contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) {
      return invalid_argument("'in <string>' requires string as left operand, not " +
                              item.type_name());
    }
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const auto& v : container.items()) {
      if (equals(v, item)) return true;
    }
    return false;
  }
  if (container.is_dict() || container.is_namespace()) {
    return item.is_string() && container.dict_ref().find(item.str()) != nullptr;
  }
  if (container.is_undefined()) return false;
  return invalid_argument("argument of type '" + container.type_name() + "' is not iterable");
}

Status check_repeat(const Value& l, const Value& r, size_t max_bytes, int64_t max_items) {
  const bool l_seq = l.is_string() || l.is_list();
  const Value& seq = l_seq ? l : r;
  const Value& count = l_seq ? r : l;
  if (!(seq.is_string() || seq.is_list()) || !count.is_int() || count.is_bool()) {
    return Status::ok();
  }
  const int64_t n = count.as_int();
  if (n <= 0) return Status::ok();
  if (seq.is_string()) {
    const size_t len = seq.str().size();
    if (len != 0 && static_cast<uint64_t>(n) > max_bytes / len) {
      return resource_exhausted("chat template output or string exceeds the limit of " +
                                std::to_string(max_bytes) + " bytes");
    }
    return Status::ok();
  }
  const size_t items = seq.items().size();
  if (items != 0 && max_items >= 0 &&
      static_cast<uint64_t>(n) > static_cast<uint64_t>(max_items) / items) {
    return resource_exhausted("list repetition exceeds the limit of " + std::to_string(max_items) +
                              " items");
  }
  return Status::ok();
}

Result<Value> binary_op(std::string_view op, const Value& l, const Value& r) {
  if (op == "~") return Value(to_str(l) + to_str(r));
  if (op == "==") return Value(equals(l, r));
  if (op == "!=") return Value(!equals(l, r));
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    if (l.is_undefined() || r.is_undefined()) return type_error(op, l, r);
    auto c = compare(l, r);
    if (!c.is_ok()) {
      return invalid_argument("'" + std::string(op) + "' not supported between instances of '" +
                              l.type_name() + "' and '" + r.type_name() + "'");
    }
    int v = c.value();
    if (op == "<") return Value(v < 0);
    if (op == ">") return Value(v > 0);
    if (op == "<=") return Value(v <= 0);
    return Value(v >= 0);
  }
  if (op == "in" || op == "notin") {
    LLMSERVE_ASSIGN_OR_RETURN(bool in, contains(r, l));
    return Value(op == "in" ? in : !in);
  }
  if (l.is_number() && r.is_number()) return arith(op, l, r);
  if (op == "+") {
    if (l.is_string() && r.is_string()) return Value(l.str() + r.str());
    if (l.is_list() && r.is_list() && l.is_tuple() == r.is_tuple()) {
      std::vector<Value> out = l.items();
      out.insert(out.end(), r.items().begin(), r.items().end());
      return Value::list(std::move(out), l.is_tuple());
    }
  }
  if (op == "*") {
    if ((l.is_string() || l.is_list()) && r.is_int() && !r.is_bool()) return repeat(l, r.as_int());
    if ((r.is_string() || r.is_list()) && l.is_int() && !l.is_bool()) return repeat(r, l.as_int());
  }
  if (op == "%" && l.is_string()) {
    return unimplemented("printf-style string formatting ('%') is not supported");
  }
  return type_error(op, l, r);
}

Result<Value> unary_op(std::string_view op, const Value& v) {
  if (op == "not") return Value(!truthy(v));
  if (v.is_number()) {
    if (op == "+") return v.is_float() ? v : Value(v.as_int());
    if (v.is_float()) return Value(-v.as_double());
    if (v.as_int() == std::numeric_limits<int64_t>::min()) return out_of_range("integer overflow");
    return Value(-v.as_int());
  }
  if (v.is_undefined()) return invalid_argument(v.str().empty() ? "value is undefined" : v.str());
  return invalid_argument("bad operand type for unary " + std::string(op) + ": '" + v.type_name() +
                          "'");
}

Value index_value(const Value& obj, int64_t index) {
  if (obj.is_string()) {
    auto chars = utf8_chars(obj.str());
    int64_t n = static_cast<int64_t>(chars.size());
    if (index < 0) index += n;
    if (index < 0 || index >= n) return Value::undefined("string index out of range");
    return Value(std::string(chars[static_cast<size_t>(index)]));
  }
  int64_t n = static_cast<int64_t>(obj.items().size());
  if (index < 0) index += n;
  if (index < 0 || index >= n) {
    return Value::undefined("'" + obj.type_name() + " object' has no attribute '" +
                            std::to_string(index) + "'");
  }
  return obj.items()[static_cast<size_t>(index)];
}

Result<Value> slice_value(const Value& obj, const Value& start, const Value& stop,
                          const Value& step) {
  auto as_opt = [](const Value& v, const char* what) -> Result<std::optional<int64_t>> {
    if (v.is_none() || v.is_undefined()) return std::optional<int64_t>();
    if (!v.is_int())
      return invalid_argument(std::string("slice ") + what + " must be an integer or None");
    return std::optional<int64_t>(v.as_int());
  };
  LLMSERVE_ASSIGN_OR_RETURN(auto o_start, as_opt(start, "start"));
  LLMSERVE_ASSIGN_OR_RETURN(auto o_stop, as_opt(stop, "stop"));
  LLMSERVE_ASSIGN_OR_RETURN(auto o_step, as_opt(step, "step"));
  int64_t st = o_step.value_or(1);
  if (st == 0) return invalid_argument("slice step cannot be zero");
  std::vector<std::string_view> chars;
  int64_t n;
  if (obj.is_string()) {
    chars = utf8_chars(obj.str());
    n = static_cast<int64_t>(chars.size());
  } else if (obj.is_list()) {
    n = static_cast<int64_t>(obj.items().size());
  } else {
    if (obj.is_undefined())
      return invalid_argument(obj.str().empty() ? "value is undefined" : obj.str());
    return invalid_argument("'" + obj.type_name() + "' object is not subscriptable");
  }
  auto clamp = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v;
    if (x < 0) x += n;
    if (st > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t b = clamp(o_start, st > 0 ? 0 : n - 1);
  int64_t e = clamp(o_stop, st > 0 ? n : -1);
  std::vector<int64_t> idx;
  for (int64_t i = b; st > 0 ? i < e : i > e;) {
    idx.push_back(i);
    if (__builtin_add_overflow(i, st, &i)) break;
  }
  if (obj.is_string()) {
    std::string out;
    for (int64_t i : idx) out += chars[static_cast<size_t>(i)];
    return Value(std::move(out));
  }
  std::vector<Value> out;
  out.reserve(idx.size());
  for (int64_t i : idx) out.push_back(obj.items()[static_cast<size_t>(i)]);
  return Value::list(std::move(out), obj.is_tuple());
}

}  // namespace llmserve::jinja
