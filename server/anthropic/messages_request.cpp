#include "server/anthropic/messages_request.h"

#include <utility>

#include "server/anthropic/volatile_system_lines.h"
#include "server/http/json_fields.h"

namespace llmserve {

using json = nlohmann::ordered_json;

namespace {

bool given(const json& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

std::string at(const std::string& base, size_t i) {
  return base + "[" + std::to_string(i) + "]";
}

// Block types Anthropic defines that carry nothing a local model reads: dropped.
bool ignored_block(const std::string& type) {
  return type == "redacted_thinking" || type == "server_tool_use" ||
         type == "web_search_tool_result" || type == "web_fetch_tool_result" ||
         type == "code_execution_tool_result" || type == "bash_code_execution_tool_result" ||
         type == "text_editor_code_execution_tool_result" || type == "mcp_tool_use" ||
         type == "mcp_tool_result" || type == "container_upload" || type == "search_result" ||
         type == "tool_search_tool_result" || type == "tool_reference";
}

Status unsupported_media(const std::string& where, const std::string& type) {
  return field_error(where, type + " blocks are not supported here (images go in user messages "
                                "to a model with a vision tower; documents not at all); send the "
                                "content as text");
}

Result<std::string> block_type(const json& block, const std::string& where) {
  if (!block.is_object()) return field_error(where, "expected a content block object");
  if (!block.contains("type") || !block["type"].is_string()) {
    return field_error(where + ".type", "is required and must be a string");
  }
  return block["type"].get<std::string>();
}

Result<std::string> text_of(const json& block, const std::string& where) {
  if (!block.contains("text") || !block["text"].is_string()) {
    return field_error(where + ".text", "is required and must be a string");
  }
  return block["text"].get<std::string>();
}

// System text (a string or text blocks), volatile lines stripped.
Result<std::string> system_text(const json& system, const std::string& where,
                                const MessagesOptions& options) {
  if (system.is_string()) {
    return strip_volatile_lines(system.get<std::string>(), options.strip_system_lines);
  }
  if (!system.is_array()) return field_error(where, "expected a string or a list of text blocks");
  std::string out;
  for (size_t k = 0; k < system.size(); ++k) {
    const std::string bw = at(where, k);
    LLMSERVE_ASSIGN_OR_RETURN(std::string type, block_type(system[k], bw));
    if (type != "text") {
      return field_error(bw + ".type", "'" + type + "' is not allowed here (only text blocks)");
    }
    LLMSERVE_ASSIGN_OR_RETURN(std::string text, text_of(system[k], bw));
    text = strip_volatile_lines(text, options.strip_system_lines);
    if (text.empty()) continue;
    if (!out.empty()) out += "\n";
    out += text;
  }
  return out;
}

// A tool_result's content: a string or text blocks.
Result<std::string> tool_result_text(const json& block, const std::string& where) {
  if (!given(block, "content")) return std::string();
  const json& c = block["content"];
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array())
    return field_error(where + ".content", "expected a string or a list of blocks");
  std::string out;
  for (size_t k = 0; k < c.size(); ++k) {
    const std::string bw = at(where + ".content", k);
    LLMSERVE_ASSIGN_OR_RETURN(std::string type, block_type(c[k], bw));
    if (type == "image" || type == "document") return unsupported_media(bw, type);
    if (type != "text") {
      if (ignored_block(type)) continue;
      return field_error(bw + ".type", "'" + type + "' is not supported in a tool_result (text)");
    }
    LLMSERVE_ASSIGN_OR_RETURN(std::string text, text_of(c[k], bw));
    out += text;
  }
  return out;
}

// An image block's URL: source {type: base64, media_type, data} as a data: URL, or
// {type: url, url}.
Result<std::string> image_block_url(const json& b, const std::string& bw) {
  const json& src = b.contains("source") ? b["source"] : json();
  if (!src.is_object() || !src.contains("type") || !src["type"].is_string()) {
    return field_error(bw + ".source", "is required: {type: base64, media_type, data}");
  }
  const std::string type = src["type"].get<std::string>();
  if (type == "url") {
    if (!src.contains("url") || !src["url"].is_string()) {
      return field_error(bw + ".source.url", "is required and must be a string");
    }
    return src["url"].get<std::string>();
  }
  if (type != "base64") {
    return field_error(bw + ".source.type", "must be base64 or url, got '" + type + "'");
  }
  if (!src.contains("media_type") || !src["media_type"].is_string()) {
    return field_error(bw + ".source.media_type", "is required and must be a string");
  }
  const std::string media = src["media_type"].get<std::string>();
  if (media != "image/jpeg" && media != "image/png" && media != "image/webp" &&
      media != "image/gif") {
    return field_error(
        bw + ".source.media_type",
        "must be image/jpeg, image/png, image/webp or image/gif, got '" + media + "'");
  }
  if (!src.contains("data") || !src["data"].is_string()) {
    return field_error(bw + ".source.data", "is required and must be a base64 string");
  }
  return "data:" + media + ";base64," + src["data"].get<std::string>();
}

Status add_message(const json& m, size_t i, json& messages, std::vector<std::string>& source,
                   const MessagesOptions& options,
                   std::vector<std::pair<std::string, std::string>>& image_source) {
  const std::string where = at("messages", i);
  if (!m.is_object()) return field_error(where, "expected an object");
  if (!m.contains("role") || !m["role"].is_string()) {
    return field_error(where + ".role", "is required and must be a string");
  }
  const std::string role = m["role"].get<std::string>();
  if (role != "user" && role != "assistant" && role != "system") {
    return field_error(where + ".role", "unknown role '" + role + "' (expected user or assistant)");
  }
  if (!m.contains("content")) return field_error(where + ".content", "is required");
  const json& content = m["content"];
  if (role == "system") {
    LLMSERVE_ASSIGN_OR_RETURN(std::string text, system_text(content, where + ".content", options));
    messages.push_back({{"role", "system"}, {"content", std::move(text)}});
    source.push_back(where);
    return Status::ok();
  }
  if (content.is_string()) {
    messages.push_back({{"role", role}, {"content", content}});
    source.push_back(where);
    return Status::ok();
  }
  if (!content.is_array()) {
    return field_error(where + ".content", "expected a string or a list of content blocks");
  }
  std::string text, reasoning;
  bool has_text = false, has_reasoning = false;
  json calls = json::array();
  json parts = json::array();  // a user message with images: text and image_url parts
  for (size_t k = 0; k < content.size(); ++k) {
    const json& b = content[k];
    const std::string bw = at(where + ".content", k);
    LLMSERVE_ASSIGN_OR_RETURN(std::string type, block_type(b, bw));
    if (type == "text") {
      LLMSERVE_ASSIGN_OR_RETURN(std::string t, text_of(b, bw));
      parts.push_back({{"type", "text"}, {"text", t}});
      text += t;
      has_text = true;
    } else if (type == "image" && role == "user") {
      LLMSERVE_ASSIGN_OR_RETURN(std::string url, image_block_url(b, bw));
      image_source.emplace_back(
          at("messages", messages.size()) + ".content[" + std::to_string(parts.size()) + "]", bw);
      parts.push_back({{"type", "image_url"}, {"image_url", {{"url", std::move(url)}}}});
      has_text = true;
    } else if (type == "image" || type == "document") {
      return unsupported_media(bw, type);
    } else if (type == "tool_use" && role == "assistant") {
      if (!b.contains("id") || !b["id"].is_string()) {
        return field_error(bw + ".id", "is required and must be a string");
      }
      if (!b.contains("name") || !b["name"].is_string()) {
        return field_error(bw + ".name", "is required and must be a string");
      }
      const json input = given(b, "input") ? b["input"] : json::object();
      if (!input.is_object()) return field_error(bw + ".input", "expected an object");
      calls.push_back(
          {{"id", b["id"]},
           {"type", "function"},
           {"function",
            {{"name", b["name"]},
             {"arguments", input.dump(-1, ' ', false, json::error_handler_t::replace)}}}});
    } else if (type == "tool_result" && role == "user") {
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string()) {
        return field_error(bw + ".tool_use_id", "is required and must be a string");
      }
      LLMSERVE_ASSIGN_OR_RETURN(std::string result, tool_result_text(b, bw));
      if (given(b, "is_error")) {
        if (!b["is_error"].is_boolean()) return field_error(bw + ".is_error", "expected a boolean");
        if (b["is_error"].get<bool>()) result = "Error: " + result;
      }
      messages.push_back(
          {{"role", "tool"}, {"tool_call_id", b["tool_use_id"]}, {"content", std::move(result)}});
      source.push_back(bw);
    } else if (type == "thinking" && role == "assistant") {
      if (b.contains("thinking") && b["thinking"].is_string()) {
        reasoning += b["thinking"].get<std::string>();
        has_reasoning = true;
      }
    } else if (ignored_block(type)) {
      continue;
    } else {
      return field_error(bw + ".type", "content block type '" + type + "' is not supported in a " +
                                           role + " message");
    }
  }
  if (role == "user") {
    if (has_text || messages.empty() || messages.back()["role"] != "tool") {
      bool images = false;
      for (const json& p : parts) images = images || p["type"] == "image_url";
      messages.push_back({{"role", "user"}, {"content", images ? std::move(parts) : json(text)}});
      source.push_back(where);
    }
    return Status::ok();
  }
  json a = {{"role", "assistant"}, {"content", std::move(text)}};
  if (has_reasoning) a["reasoning_content"] = std::move(reasoning);
  if (!calls.empty()) a["tool_calls"] = std::move(calls);
  messages.push_back(std::move(a));
  source.push_back(where);
  return Status::ok();
}

Status add_tools(const json& tools, json& chat, std::vector<size_t>& source) {
  if (!tools.is_array()) return field_error("tools", "expected a list of tools");
  json out = json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string where = at("tools", i);
    if (!t.is_object()) return field_error(where, "expected an object");
    if (given(t, "type")) {
      if (!t["type"].is_string()) return field_error(where + ".type", "expected a string");
      const std::string type = t["type"].get<std::string>();
      if (type != "custom") {
        return field_error(where + ".type", "tool type '" + type +
                                                "' is a server tool, not supported here (only "
                                                "client tools: {name, description, input_schema})");
      }
    }
    if (given(t, "defer_loading") && t["defer_loading"] == true) continue;
    if (!t.contains("name") || !t["name"].is_string()) {
      return field_error(where + ".name", "is required and must be a string");
    }
    if (!given(t, "input_schema")) return field_error(where + ".input_schema", "is required");
    json fn = {{"name", t["name"]}, {"parameters", t["input_schema"]}};
    if (given(t, "description")) fn["description"] = t["description"];
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
    source.push_back(i);
  }
  if (!out.empty()) chat["tools"] = std::move(out);
  return Status::ok();
}

Status add_tool_choice(const json& choice, json& chat) {
  if (!choice.is_object() || !choice.contains("type") || !choice["type"].is_string()) {
    return field_error("tool_choice", "expected {type: auto | any | tool | none}");
  }
  const std::string type = choice["type"].get<std::string>();
  if (type == "auto") {
    chat["tool_choice"] = "auto";
  } else if (type == "any") {
    chat["tool_choice"] = "required";
  } else if (type == "none") {
    chat["tool_choice"] = "none";
  } else if (type == "tool") {
    if (!choice.contains("name") || !choice["name"].is_string()) {
      return field_error("tool_choice.name", "is required and must be a string");
    }
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
  } else {
    return field_error("tool_choice.type", "'" + type + "' is not one of auto, any, tool, none");
  }
  if (given(choice, "disable_parallel_tool_use")) {
    if (!choice["disable_parallel_tool_use"].is_boolean()) {
      return field_error("tool_choice.disable_parallel_tool_use", "expected a boolean");
    }
    chat["parallel_tool_calls"] = !choice["disable_parallel_tool_use"].get<bool>();
  }
  return Status::ok();
}

// Anthropic's smallest thinking budget, and its errors for budgets out of range.
constexpr int64_t kMinThinkingBudget = 1024;

Status add_thinking(const json& thinking, json& chat) {
  if (!thinking.is_object() || !thinking.contains("type") || !thinking["type"].is_string()) {
    return field_error("thinking", "expected {type: enabled, budget_tokens} or {type: disabled}");
  }
  const std::string type = thinking["type"].get<std::string>();
  if (type == "enabled") {
    if (!given(thinking, "budget_tokens")) {
      return field_error("thinking.budget_tokens", "is required when thinking is enabled");
    }
    auto budget = json_fields::integer_value(thinking["budget_tokens"], "thinking.budget_tokens");
    if (!budget.is_ok()) return budget.status();
    if (*budget < kMinThinkingBudget) {
      return field_error("thinking.enabled.budget_tokens",
                         "Input should be greater than or equal to 1024");
    }
    if (chat.contains("max_tokens") && *budget >= chat["max_tokens"].get<int64_t>()) {
      return invalid_argument(
          "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
          "documentation at https://docs.claude.com/en/docs/build-with-claude/"
          "extended-thinking#max-tokens-and-context-window-size");
    }
    chat["chat_template_kwargs"] = {{"enable_thinking", true}};
    // Enforced by the engine: the reply's <think> section ends after this many tokens.
    chat["thinking_token_budget"] = *budget;
  } else if (type == "disabled") {
    chat["chat_template_kwargs"] = {{"enable_thinking", false}};
  } else if (type != "adaptive") {
    return field_error("thinking.type", "'" + type + "' is not one of enabled, disabled, adaptive");
  }
  return Status::ok();
}

}  // namespace

Result<MessagesTranslation> translate_messages_request(std::string_view body_text,
                                                       const MessagesOptions& options,
                                                       const JsonBounds& bounds, bool count_only) {
  LLMSERVE_ASSIGN_OR_RETURN(json body, parse_bounded_ordered_json(body_text, bounds));
  if (!body.is_object()) {
    return invalid_argument(std::string("request body must be a JSON object, got ") +
                            body.type_name());
  }
  MessagesTranslation t;
  json& chat = t.chat_body;
  chat = json::object();
  if (!given(body, "model")) return field_error("model", "is required");
  chat["model"] = body["model"];
  if (!count_only) {
    if (!given(body, "max_tokens")) return field_error("max_tokens", "is required");
    auto n = json_fields::integer_value(body["max_tokens"], "max_tokens");
    if (!n.is_ok()) return n.status();
    if (*n < 1) return field_error("max_tokens", "must be at least 1");
    chat["max_tokens"] = *n;
    if (given(body, "stream")) {
      if (!body["stream"].is_boolean()) return field_error("stream", "expected a boolean");
      t.stream = body["stream"].get<bool>();
    }
  }
  json messages = json::array();
  if (given(body, "system")) {
    LLMSERVE_ASSIGN_OR_RETURN(std::string sys, system_text(body["system"], "system", options));
    if (!sys.empty()) {
      messages.push_back({{"role", "system"}, {"content", std::move(sys)}});
      t.message_source.push_back("system");
    }
  }
  if (!given(body, "messages")) return field_error("messages", "is required");
  const json& in = body["messages"];
  if (!in.is_array()) return field_error("messages", "expected a list of messages");
  if (in.empty()) return field_error("messages", "must contain at least one message");
  for (size_t i = 0; i < in.size(); ++i) {
    LLMSERVE_RETURN_IF_ERROR(
        add_message(in[i], i, messages, t.message_source, options, t.image_source));
  }
  // A last assistant turn is a prefill: the reply continues its text (chat's
  // continue_final_message), as Anthropic continues it.
  const json& last = messages.back();
  if (last["role"] == "assistant" && !last.contains("tool_calls") && last["content"] != "") {
    chat["continue_final_message"] = true;
    chat["add_generation_prompt"] = false;
  }
  chat["messages"] = std::move(messages);
  if (given(body, "tools")) LLMSERVE_RETURN_IF_ERROR(add_tools(body["tools"], chat, t.tool_source));
  if (given(body, "tool_choice")) {
    LLMSERVE_RETURN_IF_ERROR(add_tool_choice(body["tool_choice"], chat));
    if (!chat.contains("tools")) {
      chat.erase("tool_choice");  // Anthropic accepts a choice without tools
      chat.erase("parallel_tool_calls");
    }
  }
  if (given(body, "thinking")) LLMSERVE_RETURN_IF_ERROR(add_thinking(body["thinking"], chat));
  if (given(body, "stop_sequences")) {
    const json& s = body["stop_sequences"];
    if (!s.is_array()) return field_error("stop_sequences", "expected a list of strings");
    for (const json& x : s) {
      if (!x.is_string()) return field_error("stop_sequences", "expected a list of strings");
      t.stop_sequences.push_back(x.get<std::string>());
    }
    if (!t.stop_sequences.empty()) chat["stop"] = s;
  }
  if (given(body, "metadata") && !body["metadata"].is_object()) {
    return field_error("metadata", "expected an object");
  }
  if (!count_only) {
    for (const char* key : {"temperature", "top_p", "top_k"}) {
      if (given(body, key)) chat[key] = body[key];
    }
  }
  return t;
}

Status to_messages_error(const Status& chat_error, const MessagesTranslation& t) {
  const std::string& m = chat_error.message();
  const auto colon = m.find(": ");
  if (colon == std::string::npos) return chat_error;
  std::string field = m.substr(0, colon);
  const std::string rest = m.substr(colon);
  auto replace_prefix = [&field](const std::string& from, const std::string& to) {
    if (field.rfind(from, 0) != 0) return false;
    field = to + field.substr(from.size());
    return true;
  };
  for (const auto& [chat_part, block] : t.image_source) {
    if (field == chat_part || field.rfind(chat_part + ".", 0) == 0) {
      return Status(chat_error.code(), block + field.substr(chat_part.size()) + rest);
    }
  }
  if (field.rfind("messages[", 0) == 0) {
    const size_t close = field.find(']');
    const size_t k = std::stoul(field.substr(9, close - 9));
    if (k < t.message_source.size()) field = t.message_source[k];
  } else if (field.rfind("tools[", 0) == 0) {
    const size_t close = field.find(']');
    const size_t k = std::stoul(field.substr(6, close - 6));
    std::string tail = field.substr(close + 1);
    if (tail.rfind(".function", 0) == 0) tail = tail.substr(9);
    if (tail.rfind(".parameters", 0) == 0) tail = ".input_schema" + tail.substr(11);
    const size_t i = k < t.tool_source.size() ? t.tool_source[k] : k;
    field = at("tools", i) + tail;
  } else if (!replace_prefix("tool_choice.function", "tool_choice") &&
             !replace_prefix("chat_template_kwargs", "thinking")) {
    replace_prefix("stop", "stop_sequences");
  }
  return Status(chat_error.code(), field + rest);
}

Result<GenerationRequest> parse_messages_request(std::string_view body, const Tokenizer& tokenizer,
                                                 const ChatRenderer& render,
                                                 const RequestLimits& limits,
                                                 const MessagesOptions& options,
                                                 MessagesTranslation* out, bool count_only) {
  LLMSERVE_ASSIGN_OR_RETURN(
      MessagesTranslation t,
      translate_messages_request(body, options, limits.json_bounds, count_only));
  const std::string chat_text =
      t.chat_body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  auto parsed = parse_chat_request(chat_text, tokenizer, render, limits);
  if (!parsed.is_ok()) return to_messages_error(parsed.status(), t);
  // Image errors come later (decoding): each block named as the Messages body has it.
  for (ImageInput& im : parsed->images) {
    const std::string m = to_messages_error(invalid_argument(im.where + ": x"), t).message();
    im.where = m.substr(0, m.rfind(": "));
  }
  if (out) *out = std::move(t);
  return parsed;
}

}  // namespace llmserve
