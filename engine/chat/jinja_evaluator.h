// Tree-walking evaluator for parsed Jinja templates, with limits so a hostile template cannot
// loop, recurse or allocate without bound. Variables resolve through the scope stack, then the
// render context (messages, add_generation_prompt, ...), then the globals (range, namespace,
// raise_exception, strftime_now, dict).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_value.h"
#include "engine/core/status.h"

namespace llmserve::jinja {

struct Limits {
  int64_t max_steps = 20'000'000;           // expression evaluations + statement executions
  int64_t max_loop_iterations = 1'000'000;  // for-loop iterations, all loops together
  int max_call_depth = 64;                  // nested macro calls
  size_t max_output_bytes = 32u << 20;      // rendered text and any single string value
  int64_t max_range = 100'000;              // elements of one range() (jinja2's sandbox limit)
};

class Evaluator {
 public:
  // context: a dict of the template variables.
  Evaluator(const Limits& limits, Value context) : limits_(limits), context_(std::move(context)) {}
  // Empties every namespace the template assigned to: `{% set ns.x = ns %}` makes a reference
  // cycle that shared ownership alone would leak.
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  Result<std::string> render(const Body& body);

  // For builtins: limit checks and calls back into the evaluator.
  const Limits& limits() const { return limits_; }
  Status check_size(size_t bytes) const;
  Status count_iterations(int64_t n);
  Result<Value> call_value(const Value& fn, CallArgs& args);
  // raise_exception(): an error that reaches the caller with the template's message verbatim.
  Status raise(std::string message);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct Frame {
    std::vector<std::pair<std::string, Value>> vars;  // few per frame: a linear scan is fastest
    bool barrier = false;  // macro frame: lookups skip to the template's top frame
  };

  Result<Flow> exec_body(const Body& body, std::string& out);
  Result<Flow> exec(const Stmt& s, std::string& out);
  Result<Flow> exec_for(const Stmt& s, std::string& out);
  Status exec_set(const Stmt& s, Value v);
  Result<Value> make_macro(const Stmt& s);
  Result<Value> eval(const Expr& e);
  Result<Value> eval_impl(const Expr& e);
  Result<Value> eval_binary(const Expr& e);
  Result<Value> eval_call(const Expr& e);
  Result<Value> get_attr(const Value& obj, const std::string& name);
  Result<Value> get_item(const Value& obj, const Value& key);
  Result<CallArgs> eval_args(const Expr& e, size_t first_arg);
  Status bind_target(const Target& t, const Value& v);

  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  Status step();
  Status locate(Status s, int line, int col) const;

  Limits limits_;
  Value context_;
  std::vector<Frame> frames_;
  int64_t steps_ = 0;
  int64_t iterations_ = 0;
  int call_depth_ = 0;
  bool raised_ = false;
  Value pending_caller_;
  std::vector<std::shared_ptr<Dict>> assigned_namespaces_;
  std::unordered_set<const Dict*> assigned_namespace_set_;
};

}  // namespace llmserve::jinja
