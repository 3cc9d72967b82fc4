#include "engine/chat/chat_template.h"

#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_evaluator.h"
#include "engine/chat/jinja_parser.h"

namespace llmserve {

struct ChatTemplate::Impl {
  jinja::Body body;
  jinja::Limits limits;
};

namespace {

// jinja2 rejects unknown filters and tests when it compiles a template; so do we.
Status check_names(const jinja::Expr& e) {
  using K = jinja::Expr::Kind;
  if (e.kind == K::kFilter && !jinja::has_filter(e.name)) {
    return invalid_argument("chat template syntax error at line " + std::to_string(e.line) +
                            ", column " + std::to_string(e.col) + ": no filter named '" + e.name +
                            "'");
  }
  if (e.kind == K::kTest && !jinja::has_test(e.name)) {
    return invalid_argument("chat template syntax error at line " + std::to_string(e.line) +
                            ", column " + std::to_string(e.col) + ": no test named '" + e.name +
                            "'");
  }
  for (const auto& a : e.args) {
    if (a) LLMSERVE_RETURN_IF_ERROR(check_names(*a));
  }
  for (const auto& [k, v] : e.kwargs) LLMSERVE_RETURN_IF_ERROR(check_names(*v));
  for (const auto& [k, v] : e.pairs) {
    LLMSERVE_RETURN_IF_ERROR(check_names(*k));
    LLMSERVE_RETURN_IF_ERROR(check_names(*v));
  }
  return Status::ok();
}

Status check_names(const jinja::Body& body) {
  for (const auto& s : body) {
    for (const jinja::Expr* e : {s->expr.get(), s->cond.get()}) {
      if (e) LLMSERVE_RETURN_IF_ERROR(check_names(*e));
    }
    for (const auto& [cond, b] : s->branches) {
      LLMSERVE_RETURN_IF_ERROR(check_names(*cond));
      LLMSERVE_RETURN_IF_ERROR(check_names(b));
    }
    for (const auto& [name, def] : s->params) {
      if (def) LLMSERVE_RETURN_IF_ERROR(check_names(*def));
    }
    LLMSERVE_RETURN_IF_ERROR(check_names(s->body));
    LLMSERVE_RETURN_IF_ERROR(check_names(s->else_body));
  }
  return Status::ok();
}

}  // namespace

ChatTemplate::ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::ChatTemplate(const ChatTemplate&) = default;
ChatTemplate& ChatTemplate::operator=(const ChatTemplate&) = default;
ChatTemplate::~ChatTemplate() = default;

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  return parse(source, jinja::Limits{});
}

Result<ChatTemplate> ChatTemplate::parse(std::string_view source, const jinja::Limits& limits) {
  auto impl = std::make_shared<Impl>();
  impl->limits = limits;
  LLMSERVE_ASSIGN_OR_RETURN(impl->body, jinja::parse_template(source));
  LLMSERVE_RETURN_IF_ERROR(check_names(impl->body));
  ChatTemplate t;
  t.impl_ = std::move(impl);
  t.source_ = std::make_shared<const std::string>(source);
  return t;
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& context) const {
  if (!context.is_object()) return invalid_argument("chat template context must be a JSON object");
  jinja::Evaluator ev(impl_->limits, jinja::from_json(context));
  return ev.render(impl_->body);
}

Result<std::string> ChatTemplate::render(const nlohmann::json& context) const {
  if (!context.is_object()) return invalid_argument("chat template context must be a JSON object");
  jinja::Evaluator ev(impl_->limits, jinja::from_json(context));
  return ev.render(impl_->body);
}

namespace {

template <typename J>
Result<std::string> apply_impl(const ChatTemplate& tmpl, const J& messages,
                               bool add_generation_prompt, const std::string& bos,
                               const std::string& eos, const J& extra) {
  if (!messages.is_array()) return invalid_argument("messages must be a JSON array");
  if (!extra.is_null() && !extra.is_object())
    return invalid_argument("extra template variables must be a JSON object");
  // As transformers' apply_chat_template: tools and documents are always defined (None when
  // not given), then the caller's variables, then the fixed ones.
  J ctx = J::object();
  ctx["tools"] = nullptr;
  ctx["documents"] = nullptr;
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) ctx[it.key()] = it.value();
  }
  ctx["messages"] = messages;
  ctx["add_generation_prompt"] = add_generation_prompt;
  ctx["bos_token"] = bos;
  ctx["eos_token"] = eos;
  return tmpl.render(ctx);
}

}  // namespace

Result<std::string> apply_chat_template(const ChatTemplate& tmpl,
                                        const nlohmann::ordered_json& messages,
                                        bool add_generation_prompt, const std::string& bos,
                                        const std::string& eos,
                                        const nlohmann::ordered_json& extra) {
  return apply_impl(tmpl, messages, add_generation_prompt, bos, eos, extra);
}

Result<std::string> apply_chat_template(const ChatTemplate& tmpl, const nlohmann::json& messages,
                                        bool add_generation_prompt, const std::string& bos,
                                        const std::string& eos, const nlohmann::json& extra) {
  return apply_impl(tmpl, messages, add_generation_prompt, bos, eos, extra);
}

}  // namespace llmserve
