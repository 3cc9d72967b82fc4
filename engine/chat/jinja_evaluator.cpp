#include "engine/chat/jinja_evaluator.h"

#include <algorithm>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_operators.h"

namespace llmserve::jinja {

namespace {
constexpr std::string_view kLocPrefix = "chat template error at line ";
}  // namespace

Result<std::string> Evaluator::render(const Body& body) {
  frames_.clear();
  frames_.emplace_back();
  std::string out;
  auto flow = exec_body(body, out);
  if (!flow.is_ok()) return flow.status();
  return out;
}

Status Evaluator::check_size(size_t bytes) const {
  if (bytes > limits_.max_output_bytes) {
    return resource_exhausted("chat template output or string exceeds the limit of " +
                              std::to_string(limits_.max_output_bytes) + " bytes");
  }
  return Status::ok();
}

Status Evaluator::count_iterations(int64_t n) {
  iterations_ += n;
  if (iterations_ > limits_.max_loop_iterations) {
    return resource_exhausted("chat template exceeded the loop iteration limit of " +
                              std::to_string(limits_.max_loop_iterations));
  }
  return Status::ok();
}

Status Evaluator::step() {
  if (++steps_ > limits_.max_steps) {
    return resource_exhausted("chat template exceeded the evaluation step limit of " +
                              std::to_string(limits_.max_steps));
  }
  return Status::ok();
}

Status Evaluator::raise(std::string message) {
  raised_ = true;
  return invalid_argument(std::move(message));
}

Status Evaluator::locate(Status s, int line, int col) const {
  if (s.is_ok() || raised_ || s.message().rfind(kLocPrefix, 0) == 0) return s;
  return Status(s.code(), std::string(kLocPrefix) + std::to_string(line) + ", column " +
                              std::to_string(col) + ": " + s.message());
}

namespace {
const Value* find_var(const std::vector<std::pair<std::string, Value>>& vars,
                      const std::string& name) {
  for (const auto& [k, v] : vars) {
    if (k == name) return &v;
  }
  return nullptr;
}
}  // namespace

void Evaluator::assign(const std::string& name, Value v) {
  auto& vars = frames_.back().vars;
  for (auto& [k, old] : vars) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars.emplace_back(name, std::move(v));
}

Value Evaluator::lookup(const std::string& name) const {
  for (size_t i = frames_.size(); i-- > 0;) {
    if (const Value* v = find_var(frames_[i].vars, name)) return *v;
    if (frames_[i].barrier) {
      if (const Value* v = find_var(frames_[0].vars, name)) return *v;
      break;
    }
  }
  if (context_.is_dict()) {
    if (const Value* v = context_.dict_ref().find(name)) return *v;
  }
  if (auto g = get_global(name)) return *g;
  return Value::undefined("'" + name + "' is undefined");
}

Result<Evaluator::Flow> Evaluator::exec_body(const Body& body, std::string& out) {
  for (const auto& s : body) {
    LLMSERVE_ASSIGN_OR_RETURN(Flow f, exec(*s, out));
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Result<Evaluator::Flow> Evaluator::exec(const Stmt& s, std::string& out) {
  LLMSERVE_RETURN_IF_ERROR(step());
  switch (s.kind) {
    case Stmt::Kind::kText:
      out += s.text;
      LLMSERVE_RETURN_IF_ERROR(check_size(out.size()));
      return Flow::kNormal;
    case Stmt::Kind::kPrint: {
      LLMSERVE_ASSIGN_OR_RETURN(Value v, eval(*s.expr));
      out += to_str(v);
      LLMSERVE_RETURN_IF_ERROR(check_size(out.size()));
      return Flow::kNormal;
    }
    case Stmt::Kind::kIf:
      for (const auto& [cond, body] : s.branches) {
        LLMSERVE_ASSIGN_OR_RETURN(Value c, eval(*cond));
        if (truthy(c)) return exec_body(body, out);
      }
      return exec_body(s.else_body, out);
    case Stmt::Kind::kFor:
      return exec_for(s, out);
    case Stmt::Kind::kSet: {
      LLMSERVE_ASSIGN_OR_RETURN(Value v, eval(*s.expr));
      LLMSERVE_RETURN_IF_ERROR(locate(exec_set(s, std::move(v)), s.line, s.col));
      return Flow::kNormal;
    }
    case Stmt::Kind::kSetBlock:
    case Stmt::Kind::kFilterBlock: {
      std::string text;
      LLMSERVE_ASSIGN_OR_RETURN(Flow f, exec_body(s.body, text));
      (void)f;
      Value v(std::move(text));
      if (s.expr) {
        frames_.emplace_back();
        assign("__body__", std::move(v));
        auto r = eval(*s.expr);
        frames_.pop_back();
        if (!r.is_ok()) return r.status();
        v = std::move(r).value();
      }
      if (s.kind == Stmt::Kind::kFilterBlock) {
        out += to_str(v);
        LLMSERVE_RETURN_IF_ERROR(check_size(out.size()));
      } else {
        LLMSERVE_RETURN_IF_ERROR(locate(exec_set(s, std::move(v)), s.line, s.col));
      }
      return Flow::kNormal;
    }
    case Stmt::Kind::kMacro: {
      LLMSERVE_ASSIGN_OR_RETURN(Value m, make_macro(s));
      assign(s.name, std::move(m));
      return Flow::kNormal;
    }
    case Stmt::Kind::kCallBlock: {
      LLMSERVE_ASSIGN_OR_RETURN(pending_caller_, make_macro(s));
      auto r = eval(*s.expr);
      pending_caller_ = Value();
      if (!r.is_ok()) return r.status();
      out += to_str(r.value());
      LLMSERVE_RETURN_IF_ERROR(check_size(out.size()));
      return Flow::kNormal;
    }
    case Stmt::Kind::kBreak:
      return Flow::kBreak;
    case Stmt::Kind::kContinue:
      return Flow::kContinue;
    case Stmt::Kind::kScope:
      return exec_body(s.body, out);
  }
  return Flow::kNormal;
}

Status Evaluator::bind_target(const Target& t, const Value& v) {
  if (t.names.size() == 1) {
    assign(t.names[0], v);
    return Status::ok();
  }
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  if (items.size() != t.names.size()) {
    return invalid_argument(
        items.size() > t.names.size()
            ? "too many values to unpack (expected " + std::to_string(t.names.size()) + ")"
            : "not enough values to unpack (expected " + std::to_string(t.names.size()) + ", got " +
                  std::to_string(items.size()) + ")");
  }
  for (size_t i = 0; i < items.size(); ++i) assign(t.names[i], items[i]);
  return Status::ok();
}

Evaluator::~Evaluator() {
  for (const auto& d : assigned_namespaces_) {
    std::vector<std::pair<std::string, Value>> entries = std::move(d->entries);
    d->entries.clear();  // the values die with `entries`, after d no longer refers to them
  }
}

Status Evaluator::exec_set(const Stmt& s, Value v) {
  if (!s.target.attr.empty()) {
    Value ns = lookup(s.target.names[0]);
    if (!ns.is_namespace())
      return invalid_argument("can only assign attributes of a namespace() object");
    if (!s.target.attr.empty() && s.target.attr[0] == '_') {
      return invalid_argument("cannot store underscore-prefixed attributes on a namespace");
    }
    if (assigned_namespace_set_.insert(ns.dict_ptr().get()).second) {
      assigned_namespaces_.push_back(ns.dict_ptr());
    }
    ns.mutable_dict().set(s.target.attr, std::move(v));
    return Status::ok();
  }
  return bind_target(s.target, v);
}

Result<Evaluator::Flow> Evaluator::exec_for(const Stmt& s, std::string& out) {
  if (s.recursive) {
    return locate(unimplemented("recursive for loops are not supported"), s.line, s.col);
  }
  LLMSERVE_ASSIGN_OR_RETURN(Value seq, eval(*s.expr));
  auto items_r = iterate(seq);
  if (!items_r.is_ok()) return locate(items_r.status(), s.expr->line, s.expr->col);
  std::vector<Value> items = std::move(items_r).value();
  if (s.cond) {
    std::vector<Value> kept;
    for (auto& item : items) {
      LLMSERVE_RETURN_IF_ERROR(count_iterations(1));
      frames_.emplace_back();
      Status st = locate(bind_target(s.target, item), s.line, s.col);
      Result<Value> c = st.is_ok() ? eval(*s.cond) : Result<Value>(st);
      frames_.pop_back();
      if (!c.is_ok()) return c.status();
      if (truthy(c.value())) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(s.else_body, out);
  const int64_t n = static_cast<int64_t>(items.size());
  // One loop object per loop (as in jinja2), updated in place each iteration.
  auto index = std::make_shared<int64_t>(0);
  auto loop = std::make_shared<Dict>();
  loop->entries = {{"index", Value()},     {"index0", Value()},  {"revindex", Value()},
                   {"revindex0", Value()}, {"first", Value()},   {"last", Value()},
                   {"length", Value(n)},   {"depth", Value(1)},  {"depth0", Value(0)},
                   {"previtem", Value()},  {"nextitem", Value()}};
  loop->entries.emplace_back(
      "cycle", Value::callable("cycle", [index](Evaluator&, CallArgs& args) -> Result<Value> {
        if (args.positional.empty()) return invalid_argument("no items for cycling given");
        return args.positional[static_cast<size_t>(*index) % args.positional.size()];
      }));
  Value loop_value = Value::dict(loop);
  for (int64_t i = 0; i < n; ++i) {
    LLMSERVE_RETURN_IF_ERROR(locate(count_iterations(1), s.line, s.col));
    *index = i;
    auto& e = loop->entries;
    e[0].second = Value(i + 1);
    e[1].second = Value(i);
    e[2].second = Value(n - i);
    e[3].second = Value(n - i - 1);
    e[4].second = Value(i == 0);
    e[5].second = Value(i == n - 1);
    e[9].second = i > 0 ? items[i - 1] : Value::undefined("'loop.previtem' is undefined");
    e[10].second = i + 1 < n ? items[i + 1] : Value::undefined("'loop.nextitem' is undefined");
    frames_.emplace_back();
    assign("loop", loop_value);
    Status st = locate(bind_target(s.target, items[i]), s.line, s.col);
    Result<Flow> f = st.is_ok() ? exec_body(s.body, out) : Result<Flow>(st);
    frames_.pop_back();
    if (!f.is_ok()) return f.status();
    if (f.value() == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Result<Value> Evaluator::make_macro(const Stmt& s) {
  const Stmt* def = &s;
  return Value::callable(
      s.name.empty() ? "caller" : s.name, [def](Evaluator& ev, CallArgs& args) -> Result<Value> {
        if (ev.call_depth_ >= ev.limits_.max_call_depth) {
          return resource_exhausted("chat template exceeded the macro call depth limit of " +
                                    std::to_string(ev.limits_.max_call_depth));
        }
        if (args.positional.size() > def->params.size()) {
          return invalid_argument("macro '" + def->name + "' takes not more than " +
                                  std::to_string(def->params.size()) + " argument(s)");
        }
        Value caller = std::move(ev.pending_caller_);
        ev.pending_caller_ = Value();
        ev.frames_.push_back(Frame{{}, true});
        ++ev.call_depth_;
        auto finish = [&ev](Result<Value> r) {
          --ev.call_depth_;
          ev.frames_.pop_back();
          return r;
        };
        if (!caller.is_undefined()) ev.assign("caller", caller);
        for (size_t i = 0; i < def->params.size(); ++i) {
          const auto& [pname, pdefault] = def->params[i];
          if (i < args.positional.size()) {
            ev.assign(pname, args.positional[i]);
            continue;
          }
          auto kw = std::find_if(args.keywords.begin(), args.keywords.end(),
                                 [&](const auto& kv) { return kv.first == pname; });
          if (kw != args.keywords.end()) {
            ev.assign(pname, kw->second);
          } else if (pdefault) {
            auto d = ev.eval(*pdefault);
            if (!d.is_ok()) return finish(d.status());
            ev.assign(pname, std::move(d).value());
          } else {
            ev.assign(pname, Value::undefined("'" + pname + "' is undefined"));
          }
        }
        for (const auto& [k, v] : args.keywords) {
          bool known = std::any_of(def->params.begin(), def->params.end(),
                                   [&](const auto& p) { return p.first == k; });
          if (!known)
            return finish(invalid_argument("macro '" + def->name + "' takes no keyword argument '" +
                                           k + "'"));
        }
        std::string text;
        auto f = ev.exec_body(def->body, text);
        if (!f.is_ok()) return finish(f.status());
        return finish(Value(std::move(text)));
      });
}

Result<Value> Evaluator::call_value(const Value& fn, CallArgs& args) {
  if (fn.is_undefined())
    return invalid_argument(fn.str().empty() ? "undefined value is not callable" : fn.str());
  if (!fn.is_callable()) return invalid_argument("'" + fn.type_name() + "' object is not callable");
  return fn.callable_ref().fn(*this, args);
}

Result<Value> Evaluator::eval(const Expr& e) {
  LLMSERVE_RETURN_IF_ERROR(step());
  auto r = eval_impl(e);
  if (!r.is_ok()) return locate(r.status(), e.line, e.col);
  return r;
}

Result<CallArgs> Evaluator::eval_args(const Expr& e, size_t first_arg) {
  CallArgs args;
  for (size_t i = first_arg; i < e.args.size(); ++i) {
    LLMSERVE_ASSIGN_OR_RETURN(Value v, eval(*e.args[i]));
    args.positional.push_back(std::move(v));
  }
  for (const auto& [k, ex] : e.kwargs) {
    LLMSERVE_ASSIGN_OR_RETURN(Value v, eval(*ex));
    args.keywords.emplace_back(k, std::move(v));
  }
  return args;
}

Result<Value> Evaluator::eval_impl(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kConst:
      return e.value;
    case Expr::Kind::kName:
      return lookup(e.name);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      std::vector<Value> items;
      for (const auto& a : e.args) {
        LLMSERVE_ASSIGN_OR_RETURN(Value v, eval(*a));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items), e.kind == Expr::Kind::kTuple);
    }
    case Expr::Kind::kDict: {
      auto d = std::make_shared<Dict>();
      for (const auto& [k, v] : e.pairs) {
        LLMSERVE_ASSIGN_OR_RETURN(Value key, eval(*k));
        LLMSERVE_ASSIGN_OR_RETURN(Value val, eval(*v));
        if (!key.is_string())
          return unimplemented("dict keys other than strings are not supported");
        d->set(key.str(), std::move(val));
      }
      return Value::dict(std::move(d));
    }
    case Expr::Kind::kGetAttr: {
      LLMSERVE_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
      return get_attr(obj, e.name);
    }
    case Expr::Kind::kGetItem: {
      LLMSERVE_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
      LLMSERVE_ASSIGN_OR_RETURN(Value key, eval(*e.args[1]));
      return get_item(obj, key);
    }
    case Expr::Kind::kSlice: {
      LLMSERVE_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
      Value parts[3];
      for (int i = 0; i < 3; ++i) {
        if (e.args[i + 1]) {
          LLMSERVE_ASSIGN_OR_RETURN(parts[i], eval(*e.args[i + 1]));
        } else {
          parts[i] = Value::none();
        }
      }
      return slice_value(obj, parts[0], parts[1], parts[2]);
    }
    case Expr::Kind::kCall:
      return eval_call(e);
    case Expr::Kind::kFilter: {
      LLMSERVE_ASSIGN_OR_RETURN(Value input, eval(*e.args[0]));
      LLMSERVE_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
      return apply_filter(*this, e.name, input, args);
    }
    case Expr::Kind::kTest: {
      LLMSERVE_ASSIGN_OR_RETURN(Value input, eval(*e.args[0]));
      LLMSERVE_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
      LLMSERVE_ASSIGN_OR_RETURN(bool r, apply_test(*this, e.name, input, args));
      return Value(e.negated ? !r : r);
    }
    case Expr::Kind::kUnary: {
      LLMSERVE_ASSIGN_OR_RETURN(Value v, eval(*e.args[0]));
      return unary_op(e.name, v);
    }
    case Expr::Kind::kBinary:
      return eval_binary(e);
    case Expr::Kind::kCond: {
      LLMSERVE_ASSIGN_OR_RETURN(Value c, eval(*e.args[1]));
      if (truthy(c)) return eval(*e.args[0]);
      if (e.args[2]) return eval(*e.args[2]);
      return Value::undefined(
          "the inline if-expression evaluated to false and no else section was defined");
    }
  }
  return internal_error("unknown expression kind");
}

Result<Value> Evaluator::eval_binary(const Expr& e) {
  LLMSERVE_ASSIGN_OR_RETURN(Value l, eval(*e.args[0]));
  if (e.name == "and") return truthy(l) ? eval(*e.args[1]) : Result<Value>(l);
  if (e.name == "or") return truthy(l) ? Result<Value>(l) : eval(*e.args[1]);
  LLMSERVE_ASSIGN_OR_RETURN(Value r, eval(*e.args[1]));
  if (e.name == "*") {
    LLMSERVE_RETURN_IF_ERROR(check_repeat(l, r, limits_.max_output_bytes, limits_.max_range));
  }
  LLMSERVE_ASSIGN_OR_RETURN(Value out, binary_op(e.name, l, r));
  if (out.is_string()) LLMSERVE_RETURN_IF_ERROR(check_size(out.str().size()));
  return out;
}

Result<Value> Evaluator::eval_call(const Expr& e) {
  const Expr& callee = *e.args[0];
  Value fn;
  if (callee.kind == Expr::Kind::kGetAttr) {
    LLMSERVE_ASSIGN_OR_RETURN(Value obj, eval(*callee.args[0]));
    auto attr = get_attr(obj, callee.name);
    if (!attr.is_ok()) return locate(attr.status(), callee.line, callee.col);
    fn = std::move(attr).value();
  } else {
    LLMSERVE_ASSIGN_OR_RETURN(fn, eval(callee));
  }
  LLMSERVE_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
  LLMSERVE_ASSIGN_OR_RETURN(Value out, call_value(fn, args));
  if (out.is_string()) LLMSERVE_RETURN_IF_ERROR(check_size(out.str().size()));
  return out;
}

Result<Value> Evaluator::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined())
    return invalid_argument(obj.str().empty() ? "value is undefined" : obj.str());
  if (obj.is_namespace()) {
    if (const Value* v = obj.dict_ref().find(name)) return *v;
  } else if (obj.is_dict()) {
    if (auto m = get_method(obj, name)) return *m;
    if (const Value* v = obj.dict_ref().find(name)) return *v;
  } else if (auto m = get_method(obj, name)) {
    return *m;
  }
  return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + name + "'");
}

Result<Value> Evaluator::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined())
    return invalid_argument(obj.str().empty() ? "value is undefined" : obj.str());
  if (obj.is_dict() || obj.is_namespace()) {
    if (key.is_string()) {
      if (const Value* v = obj.dict_ref().find(key.str())) return *v;
      if (obj.is_dict()) {
        if (auto m = get_method(obj, key.str())) return *m;
      }
    }
  } else if ((obj.is_list() || obj.is_string()) && key.is_int()) {
    return index_value(obj, key.as_int());
  } else if (key.is_string()) {
    if (auto m = get_method(obj, key.str())) return *m;
  }
  return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + to_str(key) +
                          "'");
}

}  // namespace llmserve::jinja
