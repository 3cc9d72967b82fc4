// Methods of str / list / dict values, global functions, and the shared string helpers.
#include <algorithm>
#include <cctype>
#include <ctime>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_evaluator.h"
#include "engine/chat/jinja_unicode.h"

namespace llmserve::jinja {
namespace {

bool is_py_space(unsigned char c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
}

Result<std::string> str_arg(const Value* v, std::string_view fn) {
  if (!v || !v->is_string()) return invalid_argument(std::string(fn) + "() argument must be str");
  return v->str();
}

Result<int64_t> int_arg(const Value* v, int64_t fallback, std::string_view fn) {
  if (!v || v->is_none()) return fallback;
  if (!v->is_int()) return invalid_argument(std::string(fn) + "() argument must be an integer");
  return v->as_int();
}

std::vector<Value> split_whitespace(const std::string& s, int64_t maxsplit) {
  std::vector<Value> out;
  size_t i = 0, n = s.size();
  while (true) {
    while (i < n && is_py_space(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      size_t e = n;
      while (e > i && is_py_space(static_cast<unsigned char>(s[e - 1]))) --e;
      out.emplace_back(s.substr(i, e - i));
      break;
    }
    size_t j = i;
    while (j < n && !is_py_space(static_cast<unsigned char>(s[j]))) ++j;
    out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

Result<Value> str_method(Evaluator& ev, const std::string& s, const std::string& name,
                         CallArgs& args) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"chars"}));
    return Value(py_strip(s, a.get(0), name != "rstrip", name != "lstrip"));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {}));
    if (name == "upper") return Value(py_upper(s));
    if (name == "lower") return Value(py_lower(s));
    if (name == "capitalize") return Value(py_capitalize(s));
    return Value(unicode_title(s));
  }
  if (name == "startswith" || name == "endswith") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"prefix"}));
    const Value* p = a.get(0);
    std::vector<Value> options;
    if (p && p->is_list())
      options = p->items();
    else if (p)
      options.push_back(*p);
    for (const auto& o : options) {
      LLMSERVE_ASSIGN_OR_RETURN(std::string x, str_arg(&o, name));
      bool hit = name == "startswith"
                     ? s.rfind(x, 0) == 0
                     : (s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0);
      if (hit) return Value(true);
    }
    if (!p) return invalid_argument(name + "() takes at least 1 argument");
    return Value(false);
  }
  if (name == "split" || name == "rsplit") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"sep", "maxsplit"}));
    LLMSERVE_ASSIGN_OR_RETURN(int64_t maxsplit, int_arg(a.get(1), -1, name));
    const Value* sep = a.get(0);
    if (!sep || sep->is_none()) {
      if (name == "rsplit" && maxsplit >= 0)
        return unimplemented("rsplit() with maxsplit and no separator");
      return Value::list(split_whitespace(s, maxsplit));
    }
    LLMSERVE_ASSIGN_OR_RETURN(std::string d, str_arg(sep, name));
    if (d.empty()) return invalid_argument("empty separator");
    std::vector<std::string> parts;
    if (name == "split") {
      size_t start = 0;
      while (true) {
        size_t at = (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit)
                        ? std::string::npos
                        : s.find(d, start);
        if (at == std::string::npos) break;
        parts.push_back(s.substr(start, at - start));
        start = at + d.size();
      }
      parts.push_back(s.substr(start));
    } else {
      size_t end = s.size();
      while (true) {
        if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) break;
        if (end < d.size()) break;
        size_t at = s.rfind(d, end - d.size());
        if (at == std::string::npos) break;
        parts.push_back(s.substr(at + d.size(), end - at - d.size()));
        end = at;
      }
      parts.push_back(s.substr(0, end));
      std::reverse(parts.begin(), parts.end());
    }
    std::vector<Value> out(parts.begin(), parts.end());
    return Value::list(std::move(out));
  }
  if (name == "splitlines") {
    std::vector<Value> out;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\n' || s[i] == '\r') {
        out.emplace_back(s.substr(start, i - start));
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        start = i + 1;
      }
    }
    if (start < s.size()) out.emplace_back(s.substr(start));
    return Value::list(std::move(out));
  }
  if (name == "replace") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"old", "new", "count"}));
    LLMSERVE_ASSIGN_OR_RETURN(std::string from, str_arg(a.get(0), name));
    LLMSERVE_ASSIGN_OR_RETURN(std::string to, str_arg(a.get(1), name));
    LLMSERVE_ASSIGN_OR_RETURN(int64_t count, int_arg(a.get(2), -1, name));
    std::string out;
    size_t start = 0;
    int64_t done = 0;
    if (from.empty()) {
      auto chars = utf8_chars(s);
      for (auto c : chars) {
        if (count < 0 || done < count) {
          out += to;
          ++done;
        }
        out += c;
        LLMSERVE_RETURN_IF_ERROR(ev.check_size(out.size()));
      }
      if (count < 0 || done < count) out += to;
      return Value(std::move(out));
    }
    while (count < 0 || done < count) {
      size_t at = s.find(from, start);
      if (at == std::string::npos) break;
      out.append(s, start, at - start);
      out += to;
      LLMSERVE_RETURN_IF_ERROR(ev.check_size(out.size()));
      start = at + from.size();
      ++done;
    }
    out.append(s, start, std::string::npos);
    return Value(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"sub"}));
    LLMSERVE_ASSIGN_OR_RETURN(std::string sub, str_arg(a.get(0), name));
    if (name == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
      int64_t n = 0;
      for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
      return Value(n);
    }
    size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
    if (at == std::string::npos) return Value(int64_t{-1});
    return Value(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, at))));
  }
  if (name == "join") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"iterable"}));
    if (!a.get(0)) return invalid_argument("join() takes exactly one argument");
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(*a.get(0)));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string())
        return invalid_argument("sequence item " + std::to_string(i) + ": expected str instance");
      if (i) out += s;
      out += items[i].str();
      LLMSERVE_RETURN_IF_ERROR(ev.check_size(out.size()));
    }
    return Value(std::move(out));
  }
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
      name == "isupper" || name == "islower") {
    if (s.empty()) return Value(false);
    bool any_cased = false;
    for (unsigned char c : s) {
      bool ok = name == "isdigit"   ? std::isdigit(c) != 0
                : name == "isalpha" ? std::isalpha(c) != 0
                : name == "isalnum" ? std::isalnum(c) != 0
                : name == "isspace" ? is_py_space(c)
                : name == "isupper" ? !std::islower(c)
                                    : !std::isupper(c);
      if (!ok) return Value(false);
      any_cased |= std::isalpha(c) != 0;
    }
    return Value((name == "isupper" || name == "islower") ? any_cased : true);
  }
  return unimplemented("str." + name + "() is not supported");
}

const char* const kStrMethods[] = {
    "strip",      "lstrip",   "rstrip", "upper",   "lower",      "title",   "capitalize",
    "startswith", "endswith", "split",  "rsplit",  "splitlines", "replace", "find",
    "rfind",      "count",    "join",   "isdigit", "isalpha",    "isalnum", "isspace",
    "isupper",    "islower",  "format", "center",  "zfill",      "index",   "encode"};
const char* const kListMethods[] = {"count",  "index", "append", "extend",  "insert", "pop",
                                    "remove", "clear", "sort",   "reverse", "copy"};
const char* const kDictMethods[] = {"items",  "keys", "values",  "get",        "copy",
                                    "update", "pop",  "popitem", "setdefault", "clear"};

template <size_t N>
bool in_list(const char* const (&names)[N], const std::string& n) {
  return std::any_of(std::begin(names), std::end(names), [&](const char* x) { return n == x; });
}

Result<Value> list_method(const Value& obj, const std::string& name, CallArgs& args) {
  if (name == "count" || name == "index") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"value"}));
    if (!a.get(0)) return invalid_argument(name + "() takes exactly one argument");
    int64_t n = 0;
    for (size_t i = 0; i < obj.items().size(); ++i) {
      if (!equals(obj.items()[i], *a.get(0))) continue;
      if (name == "index") return Value(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") return invalid_argument(repr(*a.get(0)) + " is not in list");
    return Value(n);
  }
  if (name == "copy") return Value::list(obj.items(), obj.is_tuple());
  return invalid_argument("access to attribute '" + name + "' of '" + obj.type_name() +
                          "' object is unsafe.");
}

Result<Value> dict_method(const Value& obj, const std::string& name, CallArgs& args) {
  const Dict& d = obj.dict_ref();
  if (name == "items" || name == "keys" || name == "values") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {}));
    std::vector<Value> out;
    for (const auto& [k, v] : d.entries) {
      if (name == "items")
        out.push_back(Value::list({Value(k), v}, true));
      else if (name == "keys")
        out.emplace_back(k);
      else
        out.push_back(v);
    }
    return Value::list(std::move(out));
  }
  if (name == "get") {
    LLMSERVE_ASSIGN_OR_RETURN(auto a, BoundArgs::bind(name, args, {"key", "default"}));
    if (!a.get(0)) return invalid_argument("get expected at least 1 argument, got 0");
    if (a.get(0)->is_string()) {
      if (const Value* v = d.find(a.get(0)->str())) return *v;
    }
    return a.get_or(1, Value::none());
  }
  if (name == "copy") return Value::dict(std::make_shared<Dict>(d));
  return invalid_argument("access to attribute '" + name + "' of 'dict' object is unsafe.");
}

}  // namespace

std::string py_strip(std::string_view s, const Value* chars, bool left, bool right) {
  if (chars && chars->is_string()) {
    auto set = utf8_chars(chars->str());
    auto cs = utf8_chars(s);
    size_t b = 0, e = cs.size();
    auto in_set = [&](std::string_view c) {
      return std::find(set.begin(), set.end(), c) != set.end();
    };
    if (left)
      while (b < e && in_set(cs[b])) ++b;
    if (right)
      while (e > b && in_set(cs[e - 1])) --e;
    std::string out;
    for (size_t i = b; i < e; ++i) out += cs[i];
    return out;
  }
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && is_py_space(static_cast<unsigned char>(s[b]))) ++b;
  if (right)
    while (e > b && is_py_space(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string py_upper(std::string_view s) {
  return unicode_upper(s);
}
std::string py_lower(std::string_view s) {
  return unicode_lower(s);
}
std::string py_capitalize(std::string_view s) {
  return unicode_capitalize(s);
}

std::string py_title_words(std::string_view s) {
  // jinja2: re.split(r"([-\s({\[<]+)") then item[0].upper() + item[1:].lower() per piece.
  std::string out;
  bool at_start = true;
  for (uint32_t cp : decode_utf8(s)) {
    bool sep = (cp < 0x80 && is_py_space(static_cast<unsigned char>(cp))) || cp == '-' ||
               cp == '(' || cp == '{' || cp == '[' || cp == '<';
    if (sep) {
      append_code_point(out, cp);
      at_start = true;
    } else {
      if (at_start && cp == 0x00df)
        out += "SS";
      else
        append_code_point(out, at_start ? cp_upper(cp) : cp_lower(cp));
      at_start = false;
    }
  }
  return out;
}

Result<std::vector<Value>> iterate(const Value& v) {
  if (v.is_list()) return v.items();
  if (v.is_dict()) {
    std::vector<Value> keys;
    for (const auto& [k, x] : v.dict_ref().entries) keys.emplace_back(k);
    return keys;
  }
  if (v.is_string()) {
    std::vector<Value> out;
    for (auto c : utf8_chars(v.str())) out.emplace_back(std::string(c));
    return out;
  }
  if (v.is_undefined()) return std::vector<Value>{};
  return invalid_argument("'" + v.type_name() + "' object is not iterable");
}

std::optional<Value> get_method(const Value& obj, const std::string& name) {
  if (obj.is_string()) {
    if (!in_list(kStrMethods, name)) return std::nullopt;
    std::string s = obj.str();
    return Value::callable("str." + name, [s, name](Evaluator& ev, CallArgs& args) {
      return str_method(ev, s, name, args);
    });
  }
  if (obj.is_list()) {
    if (!in_list(kListMethods, name)) return std::nullopt;
    return Value::callable("list." + name, [obj, name](Evaluator&, CallArgs& args) {
      return list_method(obj, name, args);
    });
  }
  if (obj.is_dict()) {
    if (!in_list(kDictMethods, name)) return std::nullopt;
    return Value::callable("dict." + name, [obj, name](Evaluator&, CallArgs& args) {
      return dict_method(obj, name, args);
    });
  }
  return std::nullopt;
}

namespace {

Result<Value> global_range(Evaluator& ev, CallArgs& args) {
  if (!args.keywords.empty()) return invalid_argument("range() takes no keyword arguments");
  if (args.positional.empty() || args.positional.size() > 3) {
    return invalid_argument("range expected 1 to 3 arguments, got " +
                            std::to_string(args.positional.size()));
  }
  for (const auto& a : args.positional) {
    if (!a.is_int())
      return invalid_argument("'" + a.type_name() + "' object cannot be interpreted as an integer");
  }
  int64_t start = 0, stop, step = 1;
  if (args.positional.size() == 1) {
    stop = args.positional[0].as_int();
  } else {
    start = args.positional[0].as_int();
    stop = args.positional[1].as_int();
    if (args.positional.size() == 3) step = args.positional[2].as_int();
  }
  if (step == 0) return invalid_argument("range() arg 3 must not be zero");
  long double count = step > 0 ? (static_cast<long double>(stop) - start) / step
                               : (static_cast<long double>(start) - stop) / -step;
  if (count > static_cast<long double>(ev.limits().max_range)) {
    return resource_exhausted("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
                              std::to_string(ev.limits().max_range) + ").");
  }
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.emplace_back(i);
  return Value::list(std::move(out));
}

Result<Value> make_dict_from_args(CallArgs& args, bool is_namespace) {
  auto d = std::make_shared<Dict>();
  if (args.positional.size() > 1) return invalid_argument("expected at most 1 positional argument");
  if (!args.positional.empty()) {
    const Value& init = args.positional[0];
    if (!init.is_dict() && !init.is_namespace())
      return unimplemented("dict() from a non-mapping is not supported");
    *d = init.dict_ref();
  }
  for (auto& [k, v] : args.keywords) d->set(k, v);
  if (is_namespace) {
    for (const auto& [k, v] : d->entries) {
      if (!k.empty() && k[0] == '_') {
        return invalid_argument(
            "Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" +
            k + "'.");
      }
    }
    return Value::make_namespace(std::move(d));
  }
  return Value::dict(std::move(d));
}

}  // namespace

std::optional<Value> get_global(const std::string& name) {
  if (name == "range") return Value::callable("range", global_range);
  if (name == "namespace") {
    return Value::callable("namespace",
                           [](Evaluator&, CallArgs& a) { return make_dict_from_args(a, true); });
  }
  if (name == "dict") {
    return Value::callable("dict",
                           [](Evaluator&, CallArgs& a) { return make_dict_from_args(a, false); });
  }
  if (name == "raise_exception") {
    return Value::callable("raise_exception", [](Evaluator& ev, CallArgs& a) -> Result<Value> {
      LLMSERVE_ASSIGN_OR_RETURN(auto b, BoundArgs::bind("raise_exception", a, {"message"}));
      return ev.raise(b.get(0) ? to_str(*b.get(0)) : std::string());
    });
  }
  if (name == "strftime_now") {
    return Value::callable("strftime_now", [](Evaluator&, CallArgs& a) -> Result<Value> {
      LLMSERVE_ASSIGN_OR_RETURN(auto b, BoundArgs::bind("strftime_now", a, {"format"}));
      if (!b.get(0) || !b.get(0)->is_string())
        return invalid_argument("strftime_now() argument must be str");
      std::time_t now = std::time(nullptr);
      std::tm tm{};
      localtime_r(&now, &tm);
      std::string fmt = b.get(0)->str();
      if (fmt.empty()) return Value(std::string());
      std::string buf(256 + fmt.size() * 16, '\0');
      size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
      buf.resize(n);
      return Value(std::move(buf));
    });
  }
  return std::nullopt;
}

}  // namespace llmserve::jinja
