// `llmserve chat-template`: renders a chat with the model's chat template (GGUF
// tokenizer.chat_template or tokenizer_config.json chat_template) or a template file, and prints
// the prompt text exactly as the engine would tokenize it.
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/chat/chat_template.h"
#include "engine/tokenizer/load_tokenizer.h"
#include "server/cli/command.h"

namespace llmserve::cli {
namespace {

struct ChatTemplateOptions {
  std::string model;
  std::string messages;
  std::string template_file;
  std::string bos;
  std::string eos;
  bool add_generation_prompt = false;
};

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string token_text(const TokenizerSpec& spec, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= spec.tokens.size()) return "";
  return spec.tokens[static_cast<size_t>(id)];
}

Status run(const ChatTemplateOptions& o) {
  LLMSERVE_ASSIGN_OR_RETURN(std::string messages_text, read_text(o.messages));
  auto input = nlohmann::ordered_json::parse(messages_text, nullptr, false);
  if (input.is_discarded()) return invalid_argument(o.messages + ": not valid JSON");
  // Either an array of messages, or an object with "messages" plus other template variables
  // (tools, date_string, ...).
  nlohmann::ordered_json messages, extra = nlohmann::ordered_json::object();
  if (input.is_array()) {
    messages = std::move(input);
  } else if (input.is_object() && input.contains("messages")) {
    messages = input["messages"];
    for (auto it = input.begin(); it != input.end(); ++it) {
      if (it.key() != "messages") extra[it.key()] = it.value();
    }
  } else {
    return invalid_argument(o.messages +
                            ": expected an array of messages or an object with \"messages\"");
  }

  std::string source, bos = o.bos, eos = o.eos;
  if (!o.model.empty()) {
    LLMSERVE_ASSIGN_OR_RETURN(TokenizerSpec spec, load_tokenizer_spec(o.model));
    source = spec.chat_template;
    if (bos.empty()) bos = token_text(spec, spec.bos_id);
    if (eos.empty()) eos = token_text(spec, spec.eos_id);
  }
  if (!o.template_file.empty()) {
    LLMSERVE_ASSIGN_OR_RETURN(source, read_text(o.template_file));
  }
  if (source.empty()) return not_found(o.model + " has no chat template; pass --template FILE");
  LLMSERVE_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::parse(source));
  LLMSERVE_ASSIGN_OR_RETURN(
      std::string text,
      apply_chat_template(tmpl, messages, o.add_generation_prompt, bos, eos, extra));
  std::cout << text;
  std::cout.flush();
  return Status::ok();
}

}  // namespace

void add_chat_template_command(CLI::App& root, int& exit_code) {
  auto opts = std::make_shared<ChatTemplateOptions>();
  CLI::App* cmd =
      root.add_subcommand("chat-template", "Render a chat with the model's chat template");
  cmd->add_option("--model", opts->model,
                  "A .gguf file or an HF model directory (template, BOS / EOS)");
  cmd->add_option("--messages", opts->messages,
                  "JSON file: an array of {role, content} messages, or an object with \"messages\" "
                  "and other template variables such as \"tools\"")
      ->required();
  cmd->add_option("--template", opts->template_file,
                  "A Jinja template file (instead of the model's)");
  cmd->add_option("--bos-token", opts->bos, "bos_token text (default: the model's)");
  cmd->add_option("--eos-token", opts->eos, "eos_token text (default: the model's)");
  cmd->add_flag("--add-generation-prompt", opts->add_generation_prompt,
                "End with the header of an assistant turn");
  cmd->callback([opts, &exit_code] {
    if (opts->model.empty() && opts->template_file.empty()) {
      std::cerr << "error: pass --model PATH or --template FILE\n";
      exit_code = 2;
      return;
    }
    Status st = run(*opts);
    if (!st.is_ok()) {
      std::cerr << "error: " << st.to_string() << "\n";
      exit_code = 1;
      return;
    }
    exit_code = 0;
  });
}

}  // namespace llmserve::cli
