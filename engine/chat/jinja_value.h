// The value model of the Jinja interpreter: Python-like values (undefined, None, bool, int,
// float, str, list / tuple, ordered dict, namespace, callable) with Python's printing, equality,
// ordering and truthiness. Strings are UTF-8; lengths and indices count code points.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"

namespace llmserve::jinja {

class Value;
class Evaluator;
struct Dict;

// Arguments of a call: positional values and keyword arguments in call order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

using NativeFn = std::function<Result<Value>(Evaluator&, CallArgs&)>;
struct Callable {
  std::string name;
  NativeFn fn;
};

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kCallable
  };

  Value() = default;                                                // undefined
  Value(bool b) : kind_(Kind::kBool), b_(b) {}                      // NOLINT
  Value(int v) : kind_(Kind::kInt), i_(v) {}                        // NOLINT
  Value(int64_t v) : kind_(Kind::kInt), i_(v) {}                    // NOLINT
  Value(double v) : kind_(Kind::kFloat), f_(v) {}                   // NOLINT
  Value(std::string s) : kind_(Kind::kString), s_(std::move(s)) {}  // NOLINT
  Value(const char* s) : kind_(Kind::kString), s_(s) {}             // NOLINT

  static Value undefined(std::string name = {});
  static Value none();
  static Value list(std::vector<Value> items = {}, bool tuple = false);
  static Value dict();
  static Value dict(std::shared_ptr<Dict> d);
  static Value make_namespace(std::shared_ptr<Dict> d);
  static Value callable(std::string name, NativeFn fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const {
    return kind_ == Kind::kInt || kind_ == Kind::kBool;
  }  // Python: bool is int
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kList && tuple_; }
  bool is_dict() const { return kind_ == Kind::kDict && !namespace_; }
  bool is_namespace() const { return kind_ == Kind::kDict && namespace_; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double as_double() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int()); }
  const std::string& str() const { return s_; }  // string value, or an undefined value's name
  const std::vector<Value>& items() const { return *list_; }
  std::vector<Value>& mutable_items() { return *list_; }
  const Dict& dict_ref() const { return *dict_; }
  Dict& mutable_dict() { return *dict_; }
  const std::shared_ptr<Dict>& dict_ptr() const { return dict_; }
  const Callable& callable_ref() const { return *fn_; }

  std::string type_name() const;  // Python type name: 'str', 'list', 'dict', ...

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  bool tuple_ = false;
  bool namespace_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<std::vector<Value>> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Callable> fn_;
};

// An insertion-ordered string-keyed map (Python dict with str keys).
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;

  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(std::string key, Value v);
};

bool truthy(const Value& v);
// Python str() (undefined prints as "") and repr().
std::string to_str(const Value& v);
std::string repr(const Value& v);
std::string format_float(double d);  // Python float repr: 1.0, 0.1, 1e-05, 1e+16
bool equals(const Value& a, const Value& b);
// Python ordering (<): numbers with numbers, str with str, sequences elementwise.
Result<int> compare(const Value& a, const Value& b);

// JSON input (numbers keep int / float distinction; object key order is kept).
Value from_json(const nlohmann::ordered_json& j);
Value from_json(const nlohmann::json& j);

// Python json.dumps(v, ensure_ascii, indent, separators, sort_keys). indent < 0: no newlines.
struct JsonDumpOptions {
  bool ensure_ascii = false;
  int indent = -1;
  std::string indent_str;      // used instead of spaces when non-empty (indent given as a string)
  std::string item_separator;  // default: ", " without indent, "," with indent
  std::string key_separator = ": ";
  bool sort_keys = false;
};
Result<std::string> to_json_string(const Value& v, const JsonDumpOptions& opts);

// UTF-8 helpers (invalid bytes count as one code point each).
size_t utf8_length(std::string_view s);
std::vector<std::string_view> utf8_chars(std::string_view s);

}  // namespace llmserve::jinja
