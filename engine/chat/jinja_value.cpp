#include "engine/chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace llmserve::jinja {

Value Value::undefined(std::string name) {
  Value v;
  v.s_ = std::move(name);
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::list(std::vector<Value> items, bool tuple) {
  Value v;
  v.kind_ = Kind::kList;
  v.tuple_ = tuple;
  v.list_ = std::make_shared<std::vector<Value>>(std::move(items));
  return v;
}

Value Value::dict() {
  return dict(std::make_shared<Dict>());
}

Value Value::dict(std::shared_ptr<Dict> d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::move(d);
  return v;
}

Value Value::make_namespace(std::shared_ptr<Dict> d) {
  Value v = dict(std::move(d));
  v.namespace_ = true;
  return v;
}

Value Value::callable(std::string name, NativeFn fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.fn_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return tuple_ ? "tuple" : "list";
    case Kind::kDict:
      return namespace_ ? "Namespace" : "dict";
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

Value* Dict::find(std::string_view key) {
  for (auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(std::string key, Value v) {
  if (Value* existing = find(key)) {
    *existing = std::move(v);
  } else {
    entries.emplace_back(std::move(key), std::move(v));
  }
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.as_bool();
    case Value::Kind::kInt:
      return v.as_int() != 0;
    case Value::Kind::kFloat:
      return v.as_double() != 0.0;
    case Value::Kind::kString:
      return !v.str().empty();
    case Value::Kind::kList:
      return !v.items().empty();
    case Value::Kind::kDict:
      return v.is_namespace() || !v.dict_ref().entries.empty();
    case Value::Kind::kCallable:
      return true;
  }
  return false;
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci looks like "-1.2345e+05": split into sign, digits and exponent.
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t epos = sci.find('e');
  int exp = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (size_t i = 0; i < epos; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    int point = exp + 1;  // digits before the decimal point
    if (point <= 0) {
      out += "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, point) + "." + digits.substr(point);
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += ebuf;
  }
  return out;
}

namespace {

void append_repr_string(std::string& out, const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  out += quote;
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
}

// Containers being printed, outermost first: a namespace can hold itself (`{% set ns.x = ns %}`),
// and as Python we print a container met again inside itself as [...] / {...}.
thread_local std::vector<const void*> t_repr_active;

struct ReprActive {
  explicit ReprActive(const void* p) { t_repr_active.push_back(p); }
  ~ReprActive() { t_repr_active.pop_back(); }
  ReprActive(const ReprActive&) = delete;
  ReprActive& operator=(const ReprActive&) = delete;
};

bool repr_active(const void* p) {
  return std::find(t_repr_active.begin(), t_repr_active.end(), p) != t_repr_active.end();
}

void append_repr(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString:
      append_repr_string(out, v.str());
      return;
    case Value::Kind::kList: {
      if (repr_active(&v.items())) {
        out += v.is_tuple() ? "(...)" : "[...]";
        return;
      }
      const ReprActive active(&v.items());
      out += v.is_tuple() ? '(' : '[';
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        append_repr(out, items[i]);
      }
      if (v.is_tuple() && items.size() == 1) out += ',';
      out += v.is_tuple() ? ')' : ']';
      return;
    }
    case Value::Kind::kDict: {
      if (v.is_namespace()) out += "<Namespace ";
      if (repr_active(&v.dict_ref())) {
        out += v.is_namespace() ? "{...}>" : "{...}";
        return;
      }
      const ReprActive active(&v.dict_ref());
      out += '{';
      bool first = true;
      for (const auto& [k, item] : v.dict_ref().entries) {
        if (!first) out += ", ";
        first = false;
        append_repr_string(out, k);
        out += ": ";
        append_repr(out, item);
      }
      out += '}';
      if (v.is_namespace()) out += '>';
      return;
    }
    default:
      out += to_str(v);
  }
}

}  // namespace

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.as_int());
    case Value::Kind::kFloat:
      return format_float(v.as_double());
    case Value::Kind::kString:
      return v.str();
    case Value::Kind::kCallable:
      return "<function " + v.callable_ref().name + ">";
    default: {
      std::string out;
      append_repr(out, v);
      return out;
    }
  }
}

std::string repr(const Value& v) {
  std::string out;
  append_repr(out, v);
  return out;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.str() == b.str();
    case Value::Kind::kList: {
      if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i) {
        if (!equals(a.items()[i], b.items()[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.is_namespace() || b.is_namespace()) return a.dict_ptr() == b.dict_ptr();
      const auto& ea = a.dict_ref().entries;
      if (ea.size() != b.dict_ref().entries.size()) return false;
      for (const auto& [k, v] : ea) {
        const Value* other = b.dict_ref().find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable:
      return &a.callable_ref() == &b.callable_ref();
    default:
      return false;
  }
}

Result<int> compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    int c = a.str().compare(b.str());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    size_t n = std::min(a.items().size(), b.items().size());
    for (size_t i = 0; i < n; ++i) {
      if (equals(a.items()[i], b.items()[i])) continue;
      return compare(a.items()[i], b.items()[i]);
    }
    size_t x = a.items().size(), y = b.items().size();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  return invalid_argument("'<' not supported between instances of '" + a.type_name() + "' and '" +
                          b.type_name() + "'");
}

namespace {
size_t utf8_seq_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) return 2;
  if ((c & 0xf0) == 0xe0) return 3;
  if ((c & 0xf8) == 0xf0) return 4;
  return 1;
}
}  // namespace

std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_seq_len(static_cast<unsigned char>(s[i]));
    if (i + n > s.size()) n = 1;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) {
        n = 1;
        break;
      }
    }
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

size_t utf8_length(std::string_view s) {
  bool ascii = true;
  for (unsigned char c : s) ascii &= c < 0x80;
  return ascii ? s.size() : utf8_chars(s).size();
}

}  // namespace llmserve::jinja
