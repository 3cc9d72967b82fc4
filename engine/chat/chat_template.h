// Chat templates: a model's Jinja chat template (GGUF `tokenizer.chat_template` or HF
// tokenizer_config.json `chat_template`) rendered by our own Jinja interpreter with the settings
// Hugging Face transformers uses (trim_blocks, lstrip_blocks, raise_exception, strftime_now,
// tojson without HTML escaping). Output matches Python jinja2 for the subset real templates use.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"

namespace llmserve {

namespace jinja {
struct Stmt;
struct Limits;
}  // namespace jinja

class ChatTemplate {
 public:
  // Syntax errors: kInvalidArgument with line and column; constructs outside the supported
  // subset (unknown tags, *args calls): kUnimplemented.
  static Result<ChatTemplate> parse(std::string_view source);
  // As above, rendering under `limits` (steps, loop iterations, output bytes) instead of the
  // defaults of jinja::Limits.
  static Result<ChatTemplate> parse(std::string_view source, const jinja::Limits& limits);

  // context: an object of template variables (messages, add_generation_prompt, bos_token,
  // eos_token, tools, ...). ordered_json keeps the caller's key order, which `tojson` shows.
  // Errors: raise_exception(msg) gives kInvalidArgument with exactly msg; evaluation errors
  // name the line and column; hitting a limit gives kResourceExhausted naming it.
  Result<std::string> render(const nlohmann::ordered_json& context) const;
  Result<std::string> render(const nlohmann::json& context) const;

  const std::string& source() const { return *source_; }

  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ChatTemplate(const ChatTemplate&);
  ChatTemplate& operator=(const ChatTemplate&);
  ~ChatTemplate();

 private:
  ChatTemplate();
  struct Impl;
  std::shared_ptr<const Impl> impl_;  // immutable after parse: safe to render concurrently
  std::shared_ptr<const std::string> source_;
};

// Renders `messages` (an array of {role, content, ...}) as transformers' apply_chat_template
// does: tools and documents default to None; extra: an object whose keys are added to the
// context (e.g. tools, date_string); then messages, add_generation_prompt, bos_token, eos_token.
Result<std::string> apply_chat_template(
    const ChatTemplate& tmpl, const nlohmann::ordered_json& messages, bool add_generation_prompt,
    const std::string& bos, const std::string& eos,
    const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());
Result<std::string> apply_chat_template(const ChatTemplate& tmpl, const nlohmann::json& messages,
                                        bool add_generation_prompt, const std::string& bos,
                                        const std::string& eos, const nlohmann::json& extra);

}  // namespace llmserve
