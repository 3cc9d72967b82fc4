#include "server/http/responses_request.h"

#include <utility>

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

// Text parts (input_text, output_text, text, refusal) flattened to one string; with input_image
// parts, the chat's content parts one for one (text and image_url), so a chat error's
// content[j] is the item's.
Result<json> flatten_parts(const json& content, const std::string& where) {
  if (content.is_string()) return content;
  if (!content.is_array()) {
    return field_error(where, "expected a string or a list of content parts");
  }
  bool images = false;
  for (const json& part : content) {
    images = images || (part.is_object() && part.value("type", json()) == "input_image");
  }
  if (images) {
    json parts = json::array();
    for (size_t k = 0; k < content.size(); ++k) {
      const json& part = content[k];
      const std::string pw = at(where, k);
      const std::string type = part.is_object() && part.contains("type") && part["type"].is_string()
                                   ? part["type"].get<std::string>()
                                   : "";
      if (type == "input_image") {
        if (!part.contains("image_url") || !part["image_url"].is_string()) {
          return field_error(pw + ".image_url",
                             "is required and must be a data: or http(s) URL (file_id is not "
                             "supported)");
        }
        parts.push_back({{"type", "image_url"}, {"image_url", {{"url", part["image_url"]}}}});
      } else if (type == "input_text" || type == "text") {
        if (!part.contains("text") || !part["text"].is_string()) {
          return field_error(pw + ".text", "is required and must be a string");
        }
        parts.push_back({{"type", "text"}, {"text", part["text"]}});
      } else {
        return field_error(pw + ".type", "content part type '" + type +
                                             "' is not supported beside input_image (only "
                                             "input_text)");
      }
    }
    return parts;
  }
  std::string text;
  for (size_t k = 0; k < content.size(); ++k) {
    const json& part = content[k];
    const std::string pw = at(where, k);
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return field_error(pw + ".type", "each content part must be an object with a string type");
    }
    const std::string type = part["type"].get<std::string>();
    const char* key = type == "refusal" ? "refusal" : "text";
    if (type != "input_text" && type != "output_text" && type != "text" && type != "refusal") {
      return field_error(pw + ".type",
                         "content part type '" + type +
                             "' is not supported (only input_text, output_text and input_image)");
    }
    if (!part.contains(key) || !part[key].is_string()) {
      return field_error(pw + "." + key, "is required and must be a string");
    }
    text += part[key].get<std::string>();
  }
  return json(text);
}

Status require_string(const json& item, const char* key, const std::string& where) {
  if (!item.contains(key) || !item[key].is_string()) {
    return field_error(where + "." + key, "is required and must be a string");
  }
  return Status::ok();
}

// One input item appended to `messages` (`source` gets its item index per new message).
Status add_item(const json& item, size_t i, json& messages, std::vector<int>& source) {
  const std::string where = at("input", i);
  if (!item.is_object()) return field_error(where, "expected an object");
  std::string type = "message";  // an "easy input message" has only role and content
  if (item.contains("type")) {
    if (!item["type"].is_string()) return field_error(where + ".type", "expected a string");
    type = item["type"].get<std::string>();
  }
  if (type == "message") {
    LLMSERVE_RETURN_IF_ERROR(require_string(item, "role", where));
    const std::string role = item["role"].get<std::string>();
    if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
      return field_error(where + ".role", "unknown role '" + role +
                                              "' (expected user, assistant, system or developer)");
    }
    if (!item.contains("content")) return field_error(where + ".content", "is required");
    LLMSERVE_ASSIGN_OR_RETURN(json content, flatten_parts(item["content"], where + ".content"));
    messages.push_back({{"role", role}, {"content", std::move(content)}});
    source.push_back(static_cast<int>(i));
    return Status::ok();
  }
  if (type == "function_call") {
    LLMSERVE_RETURN_IF_ERROR(require_string(item, "call_id", where));
    LLMSERVE_RETURN_IF_ERROR(require_string(item, "name", where));
    LLMSERVE_RETURN_IF_ERROR(require_string(item, "arguments", where));
    json call = {{"id", item["call_id"]},
                 {"type", "function"},
                 {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}};
    // Calls in a row are one assistant turn (parallel calls).
    const bool joins = !messages.empty() && messages.back()["role"] == "assistant" &&
                       messages.back().contains("tool_calls") &&
                       messages.back()["content"].is_null();
    if (joins) {
      messages.back()["tool_calls"].push_back(std::move(call));
    } else {
      messages.push_back(
          {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}});
      source.push_back(static_cast<int>(i));
    }
    return Status::ok();
  }
  if (type == "function_call_output") {
    LLMSERVE_RETURN_IF_ERROR(require_string(item, "call_id", where));
    if (!item.contains("output")) return field_error(where + ".output", "is required");
    LLMSERVE_ASSIGN_OR_RETURN(json text, flatten_parts(item["output"], where + ".output"));
    if (!text.is_string()) {
      return field_error(where + ".output", "a function call's output must be text");
    }
    messages.push_back(
        {{"role", "tool"}, {"tool_call_id", item["call_id"]}, {"content", std::move(text)}});
    source.push_back(static_cast<int>(i));
    return Status::ok();
  }
  if (type == "reasoning") return Status::ok();  // nothing of ours to render
  return field_error(where + ".type", "input item type '" + type +
                                          "' is not supported (expected message, function_call "
                                          "or function_call_output)");
}

Result<json> translate_tools(const json& tools) {
  if (!tools.is_array()) return field_error("tools", "expected a list of tools");
  json out = json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string where = at("tools", i);
    if (!t.is_object()) return field_error(where, "expected an object");
    if (!t.contains("type") || !t["type"].is_string()) {
      return field_error(where + ".type", "is required and must be a string");
    }
    const std::string type = t["type"].get<std::string>();
    if (type != "function") {
      return field_error(where + ".type",
                         "tool type '" + type + "' is not supported (only function tools)");
    }
    if (t.contains("function") && !t.contains("name")) {
      return field_error(where + ".name",
                         "is required (the Responses API's tools are flat: {type, name, "
                         "description, parameters}, not chat's {type, function})");
    }
    json fn = json::object();
    for (const char* key : {"name", "description", "parameters", "strict"}) {
      if (t.contains(key) && !t[key].is_null()) fn[key] = t[key];
    }
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

// The tools as the Response object lists them: the spec requires `strict` and `parameters` on a
// function tool. strict defaults to true, what is done (the call's arguments follow the schema
// by grammar); parameters to null.
json echoed_tools(const json& tools) {
  json out = tools;
  for (json& t : out) {
    if (!t.is_object() || t.value("type", "") != "function") continue;
    if (!given(t, "strict")) t["strict"] = true;
    if (!t.contains("parameters")) t["parameters"] = nullptr;
  }
  return out;
}

Result<json> translate_tool_choice(const json& choice) {
  if (choice.is_string()) return choice;  // none / auto / required, checked by the chat path
  if (!choice.is_object() || !choice.contains("type") || !choice["type"].is_string()) {
    return field_error("tool_choice", "expected none, auto, required or {type: function, name}");
  }
  if (choice["type"] != "function") {
    return field_error("tool_choice.type", "'" + choice["type"].get<std::string>() +
                                               "' is not supported (only function)");
  }
  if (!choice.contains("name") || !choice["name"].is_string()) {
    return field_error("tool_choice.name", "is required and must be a string");
  }
  return json{{"type", "function"}, {"function", {{"name", choice["name"]}}}};
}

Result<json> translate_text_format(const json& text) {
  if (!text.is_object()) return field_error("text", "expected an object");
  if (!given(text, "format")) return json();
  const json& f = text["format"];
  if (!f.is_object() || !f.contains("type") || !f["type"].is_string()) {
    return field_error("text.format.type", "is required and must be a string");
  }
  const std::string type = f["type"].get<std::string>();
  if (type == "text" || type == "json_object") return json{{"type", type}};
  if (type != "json_schema") {
    return field_error("text.format.type", "'" + type +
                                               "' is not supported (expected text, json_object "
                                               "or json_schema)");
  }
  json schema = json::object();
  for (const char* key : {"name", "schema", "strict", "description"}) {
    if (f.contains(key) && !f[key].is_null()) schema[key] = f[key];
  }
  if (!schema.contains("schema")) return field_error("text.format.schema", "is required");
  return json{{"type", "json_schema"}, {"json_schema", std::move(schema)}};
}

// Fields that ask for state a stateless server cannot give.
Status refuse_state(const json& body) {
  if (given(body, "store")) {
    if (!body["store"].is_boolean()) return field_error("store", "expected a boolean");
    if (body["store"].get<bool>()) {
      return field_error("store",
                         "this server is stateless and does not store responses; send store: "
                         "false (or leave it out) and pass the whole conversation as input");
    }
  }
  if (given(body, "previous_response_id")) {
    return field_error("previous_response_id",
                       "this server is stateless and keeps no earlier responses; pass the whole "
                       "conversation (message, function_call and function_call_output items) "
                       "as input");
  }
  if (given(body, "conversation")) {
    return field_error("conversation",
                       "this server is stateless and keeps no conversations; pass the whole "
                       "conversation as input");
  }
  if (given(body, "background") && body["background"] == true) {
    return field_error("background", "background responses are not supported (stateless)");
  }
  return Status::ok();
}

}  // namespace

Result<ResponsesTranslation> translate_responses_request(std::string_view body_text,
                                                         const JsonBounds& bounds) {
  // Ordered: schemas keep the caller's property order.
  LLMSERVE_ASSIGN_OR_RETURN(json body, parse_bounded_ordered_json(body_text, bounds));
  if (!body.is_object()) {
    return invalid_argument(std::string("request body must be a JSON object, got ") +
                            body.type_name());
  }
  LLMSERVE_RETURN_IF_ERROR(refuse_state(body));
  ResponsesTranslation t;
  json& chat = t.chat_body;
  chat = json::object();
  json messages = json::array();
  if (given(body, "instructions")) {
    if (!body["instructions"].is_string()) {
      return field_error("instructions", "expected a string");
    }
    messages.push_back({{"role", "system"}, {"content", body["instructions"]}});
    t.message_source.push_back(-1);
    t.echo["instructions"] = body["instructions"];
  }
  if (!given(body, "input")) return field_error("input", "is required");
  const json& input = body["input"];
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    t.message_source.push_back(0);
  } else if (input.is_array()) {
    if (input.empty()) return field_error("input", "must contain at least one item");
    for (size_t i = 0; i < input.size(); ++i) {
      LLMSERVE_RETURN_IF_ERROR(add_item(input[i], i, messages, t.message_source));
    }
    if (messages.empty()) return field_error("input", "has no message to answer");
  } else {
    return field_error("input", "expected a string or a list of input items");
  }
  chat["messages"] = std::move(messages);
  if (given(body, "tools")) {
    LLMSERVE_ASSIGN_OR_RETURN(chat["tools"], translate_tools(body["tools"]));
    t.echo["tools"] = echoed_tools(body["tools"]);
  }
  if (given(body, "tool_choice")) {
    LLMSERVE_ASSIGN_OR_RETURN(chat["tool_choice"], translate_tool_choice(body["tool_choice"]));
    t.echo["tool_choice"] = body["tool_choice"];
  }
  if (given(body, "text")) {
    LLMSERVE_ASSIGN_OR_RETURN(json format, translate_text_format(body["text"]));
    if (!format.is_null()) chat["response_format"] = std::move(format);
    t.echo["text"] = body["text"];
  }
  if (given(body, "max_output_tokens")) {
    chat["max_tokens"] = body["max_output_tokens"];
    // Echoed as the integer it is (8.0 comes back 8); chat checks it.
    auto n = json_fields::integer_value(body["max_output_tokens"], "max_output_tokens");
    t.echo["max_output_tokens"] = n.is_ok() ? json(*n) : body["max_output_tokens"];
  }
  // As chat reads them (types and ranges checked there).
  for (const char* key :
       {"model", "parallel_tool_calls", "temperature", "top_p", "top_k", "min_p", "seed", "stop",
        "presence_penalty", "frequency_penalty", "repetition_penalty", "logit_bias", "stream",
        "user", "priority", "timeout", "min_tokens", "ignore_eos",
        // Structured outputs beside text.format, as chat reads them (one of them at most).
        "structured_outputs", "guided_json", "guided_regex", "guided_choice", "guided_grammar",
        "json_schema", "grammar"}) {
    if (given(body, key)) chat[key] = body[key];
  }
  for (const char* key : {"parallel_tool_calls", "metadata", "user"}) {
    if (given(body, key)) t.echo[key] = body[key];
  }
  return t;
}

Status to_responses_error(const Status& chat_error, const ResponsesTranslation& t) {
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
  if (field.rfind("messages[", 0) == 0) {
    const size_t close = field.find(']');
    const size_t k = std::stoul(field.substr(9, close - 9));
    std::string tail = field.substr(close + 1);
    int item = k < t.message_source.size() ? t.message_source[k] : -1;
    if (item < 0) {
      field = "instructions";
    } else {
      // An assistant turn of function_call items: tool_calls[j] is item + j.
      if (tail.rfind(".tool_calls[", 0) == 0) {
        const size_t c2 = tail.find(']');
        item += std::stoi(tail.substr(12, c2 - 12));
        tail = tail.substr(c2 + 1);
        if (tail == ".id") tail = ".call_id";
        if (tail.rfind(".function", 0) == 0) tail = tail.substr(9);
      }
      if (tail == ".tool_call_id") tail = ".call_id";
      field = "input[" + std::to_string(item) + "]" + tail;
    }
  } else if (field.rfind("tools[", 0) == 0) {
    const size_t close = field.find(']');
    std::string tail = field.substr(close + 1);
    if (tail.rfind(".function", 0) == 0) tail = tail.substr(9);
    field = field.substr(0, close + 1) + tail;
  } else if (!replace_prefix("tool_choice.function", "tool_choice") &&
             !replace_prefix("response_format.json_schema", "text.format") &&
             !replace_prefix("response_format", "text.format") &&
             !replace_prefix("max_completion_tokens", "max_output_tokens")) {
    replace_prefix("max_tokens", "max_output_tokens");
  }
  std::string text = rest;
  for (size_t at = text.find("response_format"); at != std::string::npos;
       at = text.find("response_format", at)) {
    text.replace(at, 15, "text.format");
  }
  return Status(chat_error.code(), field + text);
}

Status responses_context_error(const Status& chat_error, bool input_fits) {
  std::string m = chat_error.message();
  if (m.rfind("messages: ", 0) == 0) m.erase(0, 10);
  auto replace = [&m](std::string_view from, std::string_view to) {
    const size_t at = m.find(from);
    if (at != std::string::npos) m.replace(at, from.size(), to);
  };
  replace("in the messages", "in the input");
  replace("in the completion", "in max_output_tokens");
  replace("length of the messages or completion", "length of the input or max_output_tokens");
  return Status(chat_error.code(), (input_fits ? "max_output_tokens: " : "input: ") + m);
}

Result<GenerationRequest> parse_responses_request(std::string_view body, const Tokenizer& tokenizer,
                                                  const ChatRenderer& render,
                                                  const RequestLimits& limits,
                                                  ResponsesTranslation* out) {
  LLMSERVE_ASSIGN_OR_RETURN(ResponsesTranslation t,
                            translate_responses_request(body, limits.json_bounds));
  // Dumped in order: schemas keep the caller's property order.
  const std::string chat_text =
      t.chat_body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  auto parsed = parse_chat_request(chat_text, tokenizer, render, limits);
  const bool over_context = !parsed.is_ok() && parsed.status().code() == StatusCode::kOutOfRange &&
                            parsed.status().message().rfind("messages: ", 0) == 0;
  if (over_context) {
    // Over the context: does the input fit without max_output_tokens? (A second parse, on the
    // error path only; its tokenization stops at the context length.)
    bool input_fits = false;
    if (t.chat_body.contains("max_tokens")) {
      nlohmann::ordered_json without = t.chat_body;
      without.erase("max_tokens");
      const std::string text =
          without.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
      input_fits = parse_chat_request(text, tokenizer, render, limits).status().code() !=
                   StatusCode::kOutOfRange;
    }
    return responses_context_error(parsed.status(), input_fits);
  }
  if (!parsed.is_ok()) return to_responses_error(parsed.status(), t);
  // Image errors come later (decoding): each part named as the Responses body has it.
  for (ImageInput& im : parsed->images) {
    const std::string m = to_responses_error(invalid_argument(im.where + ": x"), t).message();
    im.where = m.substr(0, m.rfind(": "));
  }
  if (out) *out = std::move(t);
  return parsed;
}

}  // namespace llmserve
