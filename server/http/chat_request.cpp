#include "server/http/chat_request.h"

#include <limits>
#include <optional>

#include "server/common/continue_final_message.h"
#include "server/common/request_images.h"
#include "server/http/generation_fields.h"
#include "server/http/json_fields.h"
#include "server/http/structured_output_json.h"
#include "server/http/tool_history.h"

namespace llmserve {

using json_fields::field_error;
using json_fields::present;
using nlohmann::json;

namespace {

bool known_role(const std::string& role) {
  return role == "system" || role == "developer" || role == "user" || role == "assistant" ||
         role == "tool";
}

// A list of content parts: text parts joined into one string, or, when `images` is given and
// the message has image_url parts, the parts as the chat template reads them ({"type": "text",
// "text"} and {"type": "image"}), each image's URL appended to *images.
Result<json> flatten_content(const json& content, size_t i, std::vector<ImageInput>* images) {
  const std::string where = "messages[" + std::to_string(i) + "].content";
  std::string text;
  json parts = json::array();
  bool has_image = false;
  for (size_t k = 0; k < content.size(); ++k) {
    const json& part = content[k];
    const std::string pw = where + "[" + std::to_string(k) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return field_error(where, "each content part must be an object with a string 'type'");
    }
    const std::string type = part["type"].get<std::string>();
    if (type == "image_url" && images != nullptr) {
      const json& iu = part.contains("image_url") ? part["image_url"] : json();
      const json& url = iu.is_object() && iu.contains("url") ? iu["url"] : iu;
      if (!url.is_string()) {
        return field_error(pw, "an image_url part needs image_url.url (a data: or http(s) URL)");
      }
      images->push_back({pw, url.get<std::string>()});
      parts.push_back({{"type", "image"}});
      has_image = true;
      continue;
    }
    if (type != "text") {
      return field_error(where, "content part type '" + type + "' is not supported (text" +
                                    (images != nullptr ? " and image_url" : "") + " only)");
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      return field_error(where, "a text part needs a string 'text'");
    }
    text += part["text"].get<std::string>();
    parts.push_back({{"type", "text"}, {"text", part["text"]}});
  }
  if (has_image) return parts;
  return json(text);
}

// chat_template_kwargs: an object of template variables, none of those the server sets.
Result<nlohmann::ordered_json> chat_template_kwargs(const nlohmann::ordered_json& body) {
  const nlohmann::ordered_json& kwargs = body["chat_template_kwargs"];
  if (!kwargs.is_object()) {
    return field_error("chat_template_kwargs", "expected an object of template variables");
  }
  for (const char* reserved :
       {"messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token"}) {
    if (kwargs.contains(reserved)) {
      return field_error(std::string("chat_template_kwargs.") + reserved,
                         "is set by the server (use the request's own field)");
    }
  }
  return kwargs;
}

}  // namespace

Result<json> normalize_chat_messages(const json& messages, const JsonBounds& bounds,
                                     std::vector<ImageInput>* images) {
  if (!messages.is_array()) return field_error("messages", "expected a list of messages");
  if (messages.empty()) return field_error("messages", "must contain at least one message");
  json out = json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return field_error(where, "expected an object");
    if (!m.contains("role") || !m["role"].is_string()) {
      return field_error(where + ".role", "is required and must be a string");
    }
    const std::string role = m["role"].get<std::string>();
    if (!known_role(role)) {
      return field_error(
          where + ".role",
          "unknown role '" + role + "' (expected system, developer, user, assistant or tool)");
    }
    json nm = json::object();
    nm["role"] = role;
    const bool has_content = m.contains("content") && !m["content"].is_null();
    if (!has_content) {
      if (role != "assistant") return field_error(where + ".content", "is required");
      nm["content"] = "";
    } else if (m["content"].is_string()) {
      nm["content"] = m["content"];
    } else if (m["content"].is_array()) {
      LLMSERVE_ASSIGN_OR_RETURN(nm["content"], flatten_content(m["content"], i, images));
    } else {
      return field_error(where + ".content", "expected a string or a list of content parts");
    }
    if (m.contains("name") && !m["name"].is_null()) {
      if (!m["name"].is_string()) return field_error(where + ".name", "expected a string");
      nm["name"] = m["name"];
    }
    if (m.contains("tool_call_id") && m["tool_call_id"].is_string()) {
      nm["tool_call_id"] = m["tool_call_id"];
    }
    if (role == "assistant") {
      for (const char* key : {"reasoning_content", "reasoning"}) {
        if (m.contains(key) && m[key].is_string()) {
          nm["reasoning_content"] = m[key];
          break;
        }
      }
    }
    if (role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      if (!m["tool_calls"].is_array()) {
        return field_error(where + ".tool_calls", "expected a list of tool calls");
      }
      // Templates read the arguments as objects (OpenAI sends them as JSON text).
      json calls = m["tool_calls"];
      for (size_t k = 0; k < calls.size(); ++k) {
        json& c = calls[k];
        if (c.is_object() && c.contains("function") && c["function"].is_object() &&
            c["function"].contains("arguments") && c["function"]["arguments"].is_string()) {
          // Not JSON: kept as text. JSON past the bounds: refused, as a body would be.
          LLMSERVE_ASSIGN_OR_RETURN(
              std::optional<json> args,
              parse_bounded_json_if_valid(
                  c["function"]["arguments"].get<std::string>(), bounds,
                  where + ".tool_calls[" + std::to_string(k) + "].function.arguments"));
          if (args) c["function"]["arguments"] = std::move(*args);
        }
      }
      nm["tool_calls"] = std::move(calls);
    }
    out.push_back(std::move(nm));
  }
  return out;
}

Result<ChatPromptMode> read_chat_prompt_mode(const json& body, const json& messages) {
  ChatPromptMode mode;
  LLMSERVE_RETURN_IF_ERROR(
      json_fields::read_bool(body, "continue_final_message", &mode.continue_final_message));
  if (!mode.continue_final_message) {
    LLMSERVE_RETURN_IF_ERROR(
        json_fields::read_bool(body, "add_generation_prompt", &mode.add_generation_prompt));
    return mode;
  }
  // Continuing a message opens no new turn: add_generation_prompt defaults to false, and true is
  // a contradiction (as vLLM and llama.cpp's server answer it).
  mode.add_generation_prompt = false;
  bool add = false;
  LLMSERVE_RETURN_IF_ERROR(json_fields::read_bool(body, "add_generation_prompt", &add));
  if (add) {
    return field_error("continue_final_message",
                       "cannot be true together with add_generation_prompt: true (continuing the "
                       "final message opens no new turn)");
  }
  if (!messages.is_array() || messages.empty() || !messages.back().is_object() ||
      messages.back().value("role", "") != "assistant") {
    return field_error("continue_final_message",
                       "needs the last message to be an assistant's (the text to continue)");
  }
  return mode;
}

Result<std::string> render_chat_prompt(const ChatRenderer& render, const json& messages,
                                       ChatPromptMode mode,
                                       const nlohmann::ordered_json& variables) {
  LLMSERVE_ASSIGN_OR_RETURN(std::string text,
                            render(messages, mode.add_generation_prompt, variables));
  if (!mode.continue_final_message) return text;
  const json& content = messages.back()["content"];
  return cut_after_final_message(text, content.is_string() ? content.get<std::string>() : "");
}

// thinking_token_budget (vLLM's name) or thinking_budget_tokens (llama.cpp server's): tokens the
// reply may spend inside its reasoning section; -1 (or absent) = no budget.
static Status read_reasoning_budget(const json& body, int32_t* out) {
  std::optional<int32_t> seen;
  for (const char* name : {"thinking_token_budget", "thinking_budget_tokens"}) {
    if (!present(body, name)) continue;
    int32_t v = -1;
    LLMSERVE_RETURN_IF_ERROR(
        json_fields::read_int32(body, name, -1, std::numeric_limits<int32_t>::max(), &v));
    if (seen && *seen != v) {
      return field_error(name, "differs from thinking_token_budget (one budget per request)");
    }
    seen = v;
  }
  if (seen) *out = *seen;
  return Status::ok();
}

Result<GenerationRequest> parse_chat_request(std::string_view body_text, const Tokenizer& tokenizer,
                                             const ChatRenderer& render,
                                             const RequestLimits& limits) {
  LLMSERVE_ASSIGN_OR_RETURN(json body, json_fields::parse_object(body_text, limits.json_bounds));
  GenerationRequest out;
  if (!present(body, "messages")) return field_error("messages", "is required");
  LLMSERVE_ASSIGN_OR_RETURN(
      json messages, normalize_chat_messages(body.at("messages"), limits.json_bounds, &out.images));
  if (!out.images.empty() && !render.images) {
    return field_error(out.images[0].where,
                       "images are not accepted: this model has no vision tower; send text");
  }
  LLMSERVE_RETURN_IF_ERROR(
      check_image_count(out.images.size(), limits.max_images_per_request, "messages"));
  // The body again as ordered_json, parsed at most once: schemas (a tool's parameters,
  // response_format's) keep the caller's property order. The text is within the bounds already.
  std::optional<nlohmann::ordered_json> ordered;
  auto ordered_body = [&]() -> const nlohmann::ordered_json& {
    if (!ordered) ordered = nlohmann::ordered_json::parse(body_text, nullptr, false);
    return *ordered;
  };
  if (present(body, "tools") || present(body, "tool_choice") ||
      present(body, "parallel_tool_calls")) {
    LLMSERVE_ASSIGN_OR_RETURN(out.tools, parse_tool_request(ordered_body()));
  }
  LLMSERVE_RETURN_IF_ERROR(check_tool_history(body.at("messages"), out.tools.tools));
  LLMSERVE_RETURN_IF_ERROR(read_generation_fields(body, limits, &out));
  if (out.grammar && out.grammar->kind == GrammarKind::kJsonSchema) {
    keep_schema_order(ordered_body(), &*out.grammar);
  }
  if (out.tools.active()) {
    if (out.grammar) {
      LLMSERVE_RETURN_IF_ERROR(set_reply_format(*out.grammar, render.tool_format, &out.tools));
    }
    out.grammar = tool_call_grammar(out.tools, render.tool_format);
  }
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  if (present(body, "chat_template_kwargs")) {
    LLMSERVE_ASSIGN_OR_RETURN(variables, chat_template_kwargs(ordered_body()));
  }
  if (render.tool_format == ToolFormat::kGeneric) {
    if (out.tools.active()) add_tool_prompt(out.tools, messages);
    // The generic format: an assistant's calls are its reply text.
    for (json& m : messages) {
      if (m.contains("tool_calls") && m["content"] == "") {
        m["content"] = tool_calls_as_reply_text(m["tool_calls"]);
      }
    }
  } else if (out.tools.active()) {
    variables["tools"] = tools_for_template(out.tools);
  }
  bool logprobs = false;
  if (present(body, "logprobs")) {
    if (!body.at("logprobs").is_boolean()) {
      return field_error("logprobs", "expected a boolean for chat completions");
    }
    logprobs = body.at("logprobs").get<bool>();
  }
  int32_t top_logprobs = 0;
  if (present(body, "top_logprobs")) {
    LLMSERVE_RETURN_IF_ERROR(
        json_fields::read_int32(body, "top_logprobs", 0, limits.max_logprobs, &top_logprobs));
    if (!logprobs) return field_error("top_logprobs", "requires logprobs to be true");
  }
  if (logprobs) out.logprobs = top_logprobs;
  LLMSERVE_RETURN_IF_ERROR(read_reasoning_budget(body, &out.reasoning_budget));
  if (present(body, "echo")) {
    const json& e = body.at("echo");
    if (!e.is_boolean()) return field_error("echo", "expected a boolean");
    if (e.get<bool>()) {
      return field_error("echo",
                         "echo is for /v1/completions; for the prompt's logprobs in a "
                         "chat request use prompt_logprobs");
    }
  }
  LLMSERVE_ASSIGN_OR_RETURN(const ChatPromptMode mode, read_chat_prompt_mode(body, messages));
  // The prompt is rendered after the cheap checks; a placeholder stands in until then.
  out.prompt_texts.emplace_back();
  LLMSERVE_RETURN_IF_ERROR(validate_generation_request(limits, &out));
  if (!render) return invalid_argument("this model has no chat template; use /v1/completions");
  LLMSERVE_ASSIGN_OR_RETURN(out.prompt_texts[0],
                            render_chat_prompt(render, messages, mode, variables));
  if (render.images) {
    // The processor's expansion of each image placeholder the template wrote.
    int64_t placed = 0;
    out.prompt_texts[0] =
        vision::expand_image_placeholders(out.prompt_texts[0], *render.images, &placed);
    if (placed != static_cast<int64_t>(out.images.size())) {
      return field_error("messages",
                         "the rendered prompt has " + std::to_string(placed) +
                             " image placeholders for " + std::to_string(out.images.size()) +
                             " image parts (the text must not spell " + render.images->boi + ")");
    }
  }
  const bool wrap = out.grammar.has_value() && render.template_thinks;
  out.reasoning = reasoning_start(render.reasoning, out.prompt_texts[0],
                                  /*grammar_without_block=*/out.grammar.has_value() && !wrap);
  if (wrap && out.reasoning != ReasoningStart::kOff) {
    LLMSERVE_ASSIGN_OR_RETURN(out.grammar, reasoning_grammar(*out.grammar, out.reasoning));
  }
  LLMSERVE_RETURN_IF_ERROR(prepare_prompts(tokenizer, limits, PromptStyle::kChat, &out));
  if (!out.images.empty()) {
    if (out.prompt_logprobs) {
      return field_error("prompt_logprobs", "is not available for a prompt with images");
    }
    if (out.kv_transfer.produce || out.kv_transfer.consume) {
      return field_error("kv_transfer_params", "is not available for a prompt with images");
    }
  }
  return out;
}

}  // namespace llmserve
