// Jinja filters with jinja2 3.1 semantics; `tojson` as Hugging Face defines it
// (json.dumps with ensure_ascii=False and optional indent / separators / sort_keys).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_evaluator.h"

namespace llmserve::jinja {
namespace {

// Every filter jinja2 knows (a template naming another one fails to parse, as in jinja2); the
// ones this interpreter does not support give an error naming the filter when reached.
const char* const kFilters[] = {
    "abs",       "attr",       "batch",       "capitalize", "center",  "count",
    "d",         "default",    "dictsort",    "e",          "escape",  "filesizeformat",
    "first",     "float",      "forceescape", "format",     "groupby", "indent",
    "int",       "join",       "last",        "length",     "list",    "lower",
    "items",     "map",        "min",         "max",        "pprint",  "random",
    "reject",    "rejectattr", "replace",     "reverse",    "round",   "safe",
    "select",    "selectattr", "slice",       "sort",       "string",  "striptags",
    "sum",       "title",      "trim",        "truncate",   "unique",  "upper",
    "urlencode", "urlize",     "wordcount",   "wordwrap",   "xmlattr", "tojson"};

// jinja2's make_attrgetter: dotted path, integer parts index sequences.
Value attr_path(const Value& obj, std::string_view path) {
  Value cur = obj;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string part(
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    if (cur.is_dict() || cur.is_namespace()) {
      const Value* v = cur.dict_ref().find(part);
      cur = v ? *v : Value::undefined("'dict object' has no attribute '" + part + "'");
    } else if (cur.is_list() && numeric) {
      size_t i = std::strtoull(part.c_str(), nullptr, 10);
      cur = i < cur.items().size() ? cur.items()[i] : Value::undefined("index out of range");
    } else {
      cur = Value::undefined("'" + cur.type_name() + " object' has no attribute '" + part + "'");
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return cur;
}

Result<size_t> py_len(const Value& v) {
  if (v.is_string()) return utf8_length(v.str());
  if (v.is_list()) return v.items().size();
  if (v.is_dict() || v.is_namespace()) return v.dict_ref().entries.size();
  if (v.is_undefined()) return size_t{0};
  return invalid_argument("object of type '" + v.type_name() + "' has no len()");
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(py_lower(v.str()));
  return v;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Result<Value> to_int(const Value& v, const Value& fallback) {
  if (v.is_int()) return Value(v.as_int());
  if (v.is_float()) {
    double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return fallback;
    return Value(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    std::string s = py_strip(v.str(), nullptr, true, true);
    std::string digits;
    for (char c : s) {
      if (c != '_') digits += c;
    }
    char* end = nullptr;
    errno = 0;
    long long x = std::strtoll(digits.c_str(), &end, 10);
    if (!digits.empty() && end && *end == '\0' && errno == 0 &&
        digits.find_first_of(" \t") == std::string::npos) {
      return Value(static_cast<int64_t>(x));
    }
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18) {
      return Value(static_cast<int64_t>(d));
    }
  }
  return fallback;
}

Result<Value> select_like(Evaluator& ev, std::string_view name, const Value& seq, CallArgs& args) {
  bool by_attr = name == "selectattr" || name == "rejectattr";
  bool keep_if = name == "select" || name == "selectattr";
  std::vector<Value> rest = args.positional;
  if (!args.keywords.empty())
    return invalid_argument(std::string(name) + "() takes no keyword arguments");
  std::string attr;
  if (by_attr) {
    if (rest.empty() || !rest[0].is_string())
      return invalid_argument(std::string(name) + "() needs an attribute name");
    attr = rest[0].str();
    rest.erase(rest.begin());
  }
  std::string test;
  if (!rest.empty()) {
    if (!rest[0].is_string()) return invalid_argument("test name must be a string");
    test = rest[0].str();
    rest.erase(rest.begin());
    if (!has_test(test)) return unimplemented("no test named '" + test + "'");
  }
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(seq));
  std::vector<Value> out;
  for (auto& item : items) {
    Value probe = by_attr ? attr_path(item, attr) : item;
    bool ok;
    if (test.empty()) {
      ok = truthy(probe);
    } else {
      CallArgs targs{rest, {}};
      LLMSERVE_ASSIGN_OR_RETURN(ok, apply_test(ev, test, probe, targs));
    }
    if (ok == keep_if) out.push_back(std::move(item));
  }
  return Value::list(std::move(out));
}

Result<Value> map_filter(Evaluator& ev, const Value& seq, CallArgs& args) {
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(seq));
  std::vector<Value> out;
  auto attr = std::find_if(args.keywords.begin(), args.keywords.end(),
                           [](auto& kv) { return kv.first == "attribute"; });
  if (attr != args.keywords.end()) {
    auto def = std::find_if(args.keywords.begin(), args.keywords.end(),
                            [](auto& kv) { return kv.first == "default"; });
    for (auto& item : items) {
      Value v = attr_path(item, to_str(attr->second));
      if (v.is_undefined() && def != args.keywords.end()) v = def->second;
      out.push_back(std::move(v));
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    return invalid_argument("map() needs a filter name or attribute=");
  }
  std::string filter = args.positional[0].str();
  CallArgs rest{std::vector<Value>(args.positional.begin() + 1, args.positional.end()),
                args.keywords};
  for (auto& item : items) {
    CallArgs a = rest;
    LLMSERVE_ASSIGN_OR_RETURN(Value v, apply_filter(ev, filter, item, a));
    out.push_back(std::move(v));
  }
  return Value::list(std::move(out));
}

Result<Value> tojson(Evaluator& ev, const Value& v, CallArgs& args) {
  LLMSERVE_ASSIGN_OR_RETURN(
      auto a,
      BoundArgs::bind("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"}));
  JsonDumpOptions o;
  o.ensure_ascii = a.get(0) && truthy(*a.get(0));
  if (const Value* ind = a.get(1); ind && !ind->is_none()) {
    if (ind->is_string())
      o.indent_str = ind->str(), o.indent = 0;
    else if (ind->is_int())
      o.indent = static_cast<int>(std::clamp<int64_t>(ind->as_int(), 0, 64));
    else
      return invalid_argument("tojson: indent must be an integer or a string");
  }
  if (const Value* sep = a.get(2); sep && !sep->is_none()) {
    if (!sep->is_list() || sep->items().size() != 2 || !sep->items()[0].is_string() ||
        !sep->items()[1].is_string()) {
      return invalid_argument("tojson: separators must be a pair of strings");
    }
    o.item_separator = sep->items()[0].str();
    o.key_separator = sep->items()[1].str();
    if (o.item_separator.empty()) return unimplemented("tojson: empty item separator");
  }
  o.sort_keys = a.get(3) && truthy(*a.get(3));
  LLMSERVE_ASSIGN_OR_RETURN(std::string s, to_json_string(v, o));
  LLMSERVE_RETURN_IF_ERROR(ev.check_size(s.size()));
  return Value(std::move(s));
}

Result<Value> indent_filter(const Value& v, CallArgs& args) {
  LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind("indent", args, {"width", "first", "blank"}));
  std::string pad(4, ' ');
  if (const Value* w = a.get(0)) {
    if (w->is_string())
      pad = w->str();
    else if (w->is_int())
      pad = std::string(static_cast<size_t>(std::clamp<int64_t>(w->as_int(), 0, 256)), ' ');
  }
  bool first = a.get(1) && truthy(*a.get(1));
  bool blank = a.get(2) && truthy(*a.get(2));
  std::string s = to_str(v) + "\n";
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    if (i > 0 && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  if (first) out = pad + out;
  return Value(std::move(out));
}

Result<Value> sort_filter(const Value& v, CallArgs& args) {
  LLMSERVE_ASSIGN_OR_RETURN(
      auto a, BoundArgs::bind("sort", args, {"reverse", "case_sensitive", "attribute"}));
  bool reverse = a.get(0) && truthy(*a.get(0));
  bool cs = a.get(1) && truthy(*a.get(1));
  std::string attr = a.get(2) ? to_str(*a.get(2)) : "";
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& item : items)
    keyed.emplace_back(sort_key(attr.empty() ? item : attr_path(item, attr), cs), item);
  Status err;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    auto c = reverse ? compare(y.first, x.first) : compare(x.first, y.first);
    if (!c.is_ok()) {
      err = c.status();
      return false;
    }
    return c.value() < 0;
  });
  if (!err.is_ok()) return err;
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::list(std::move(out));
}

Result<Value> minmax(const Value& v, CallArgs& args, bool is_max) {
  LLMSERVE_ASSIGN_OR_RETURN(
      auto a, BoundArgs::bind(is_max ? "max" : "min", args, {"case_sensitive", "attribute"}));
  bool cs = a.get(0) && truthy(*a.get(0));
  std::string attr = a.get(1) ? to_str(*a.get(1)) : "";
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    Value ki = sort_key(attr.empty() ? items[i] : attr_path(items[i], attr), cs);
    Value kb = sort_key(attr.empty() ? items[best] : attr_path(items[best], attr), cs);
    LLMSERVE_ASSIGN_OR_RETURN(int c, compare(ki, kb));
    if (is_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}

}  // namespace

bool has_filter(std::string_view name) {
  return std::any_of(std::begin(kFilters), std::end(kFilters),
                     [&](const char* f) { return name == f; });
}

Result<Value> apply_filter(Evaluator& ev, std::string_view name, const Value& v, CallArgs& args) {
  if (name == "tojson") return tojson(ev, v, args);
  if (name == "trim") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"chars"}));
    return Value(py_strip(to_str(v), a.get(0), true, true));
  }
  if (name == "length" || name == "count") {
    LLMSERVE_ASSIGN_OR_RETURN(size_t n, py_len(v));
    return Value(static_cast<int64_t>(n));
  }
  if (name == "upper") return Value(py_upper(to_str(v)));
  if (name == "lower") return Value(py_lower(to_str(v)));
  if (name == "capitalize") return Value(py_capitalize(to_str(v)));
  if (name == "title") return Value(py_title_words(to_str(v)));
  if (name == "string") return Value(to_str(v));
  if (name == "safe") return v;
  if (name == "e" || name == "escape" || name == "forceescape")
    return Value(html_escape(to_str(v)));
  if (name == "replace") {
    CallArgs a = args;
    LLMSERVE_ASSIGN_OR_RETURN(auto method, [&]() -> Result<Value> {
      auto m = get_method(Value(to_str(v)), "replace");
      return *m;
    }());
    return ev.call_value(method, a);
  }
  if (name == "join") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"d", "attribute"}));
    std::string sep = a.get(0) ? to_str(*a.get(0)) : "";
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += sep;
      out += to_str(a.get(1) ? attr_path(items[i], to_str(*a.get(1))) : items[i]);
      LLMSERVE_RETURN_IF_ERROR(ev.check_size(out.size()));
    }
    return Value(std::move(out));
  }
  if (name == "first" || name == "last") {
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
    if (items.empty())
      return Value::undefined("No " + std::string(name) + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "default" || name == "d") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"default_value", "boolean"}));
    bool boolean = a.get(1) && truthy(*a.get(1));
    if (v.is_undefined() || (boolean && !truthy(v))) return a.get_or(0, Value(""));
    return v;
  }
  if (name == "int") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"default", "base"}));
    return to_int(v, a.get_or(0, Value(0)));
  }
  if (name == "float") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"default"}));
    if (v.is_number()) return Value(v.as_double());
    if (v.is_string()) {
      std::string s = py_strip(v.str(), nullptr, true, true);
      char* end = nullptr;
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end && *end == '\0') return Value(d);
    }
    return a.get_or(0, Value(0.0));
  }
  if (name == "list") {
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
    return Value::list(std::move(items));
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::list();
    if (!v.is_dict()) return invalid_argument("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, x] : v.dict_ref().entries) out.push_back(Value::list({Value(k), x}, true));
    return Value::list(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_dict()) return invalid_argument("dictsort: value must be a mapping");
    std::vector<Value> pairs;
    for (const auto& [k, x] : v.dict_ref().entries)
      pairs.push_back(Value::list({Value(k), x}, true));
    CallArgs a;
    a.keywords.emplace_back("attribute", Value("0"));
    return sort_filter(Value::list(std::move(pairs)), a);
  }
  if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
    return select_like(ev, name, v, args);
  }
  if (name == "map") return map_filter(ev, v, args);
  if (name == "attr") {
    if (args.positional.size() != 1) return invalid_argument("attr() takes exactly one argument");
    return attr_path(v, to_str(args.positional[0]));
  }
  if (name == "abs") {
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    if (v.is_int()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    return invalid_argument("bad operand type for abs(): '" + v.type_name() + "'");
  }
  if (name == "round") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"precision", "method"}));
    int64_t p = a.get(0) && a.get(0)->is_int() ? a.get(0)->as_int() : 0;
    std::string method = a.get(1) ? to_str(*a.get(1)) : "common";
    if (!v.is_number()) return invalid_argument("round: value must be a number");
    if (v.is_int() && method == "common") return Value(v.as_int());
    double scale = std::pow(10.0, static_cast<double>(p));
    double x = v.as_double() * scale;
    if (method == "common")
      x = std::nearbyint(x);
    else if (method == "floor")
      x = std::floor(x);
    else if (method == "ceil")
      x = std::ceil(x);
    else
      return invalid_argument("method must be common, ceil or floor");
    return Value(x / scale);
  }
  if (name == "unique") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"case_sensitive", "attribute"}));
    bool cs = a.get(0) && truthy(*a.get(0));
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
    std::vector<Value> out, seen;
    for (auto& item : items) {
      Value key = sort_key(a.get(1) ? attr_path(item, to_str(*a.get(1))) : item, cs);
      if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); }))
        continue;
      seen.push_back(key);
      out.push_back(item);
    }
    return Value::list(std::move(out));
  }
  if (name == "reverse") {
    if (v.is_string()) {
      auto chars = utf8_chars(v.str());
      std::string out;
      for (size_t i = chars.size(); i-- > 0;) out += chars[i];
      return Value(std::move(out));
    }
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "sort") return sort_filter(v, args);
  if (name == "min" || name == "max") return minmax(v, args, name == "max");
  if (name == "sum") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"attribute", "start"}));
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
    Value acc = a.get_or(1, Value(0));
    for (auto& item : items) {
      Value x = a.get(0) ? attr_path(item, to_str(*a.get(0))) : item;
      if (!acc.is_number() || !x.is_number())
        return invalid_argument("sum: values must be numbers");
      acc = (acc.is_float() || x.is_float()) ? Value(acc.as_double() + x.as_double())
                                             : Value(acc.as_int() + x.as_int());
    }
    return acc;
  }
  if (name == "indent") return indent_filter(v, args);
  return unimplemented("no filter named '" + std::string(name) + "'");
}

}  // namespace llmserve::jinja
