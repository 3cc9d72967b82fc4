// Jinja builtins: filters (`x | trim`), tests (`x is defined`), methods of str / list / dict
// values (`s.strip()`), and global functions (range, namespace, dict, raise_exception,
// strftime_now), with jinja2 / Python semantics. Errors carry no location; the evaluator adds it.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/jinja_value.h"
#include "engine/core/status.h"

namespace llmserve::jinja {

// Python-style binding of call arguments to named parameters.
class BoundArgs {
 public:
  static Result<BoundArgs> bind(std::string_view fn, CallArgs& args,
                                std::initializer_list<std::string_view> params);
  const Value* get(size_t i) const { return slots_[i] ? &*slots_[i] : nullptr; }
  Value get_or(size_t i, Value fallback) const {
    return slots_[i] ? *slots_[i] : std::move(fallback);
  }

 private:
  std::vector<std::optional<Value>> slots_;
};

bool has_filter(std::string_view name);
Result<Value> apply_filter(Evaluator& ev, std::string_view name, const Value& input,
                           CallArgs& args);

bool has_test(std::string_view name);
Result<bool> apply_test(Evaluator& ev, std::string_view name, const Value& input, CallArgs& args);

// A bound method of obj (str / list / dict), or nullopt when obj has no method of that name.
std::optional<Value> get_method(const Value& obj, const std::string& name);

// A global function, or nullopt.
std::optional<Value> get_global(const std::string& name);

// Shared string helpers (Python semantics, ASCII case mapping).
std::string py_strip(std::string_view s, const Value* chars, bool left, bool right);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title_words(std::string_view s);  // jinja's `title` filter
std::string py_capitalize(std::string_view s);
Result<std::vector<Value>> iterate(const Value& v);  // Python iter(): list items, dict keys, chars

}  // namespace llmserve::jinja
