#include "server/http/responses_output.h"

#include <cstdio>
#include <functional>
#include <utility>

namespace llmserve {

using json = nlohmann::ordered_json;

namespace {

std::string hex(uint64_t v, int digits) {
  std::string s(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0 && v; --i, v >>= 4) s[i] = "0123456789abcdef"[v & 15];
  return s;
}

// The id's hex part, reused for item ids ("msg_<hex>_<index>", "fc_<hex>_<index>").
std::string id_body(const ResponsesContext& ctx) {
  return ctx.id.rfind("resp_", 0) == 0 ? ctx.id.substr(5) : ctx.id;
}

std::string item_id(const ResponsesContext& ctx, const char* prefix, size_t index) {
  return std::string(prefix) + id_body(ctx) + "_" + std::to_string(index);
}

json text_part(const std::string& text) {
  return {{"type", "output_text"},
          {"text", text},
          {"annotations", json::array()},
          {"logprobs", json::array()}};
}

json message_item(const std::string& id, const std::string& text, const char* status) {
  json content = json::array();
  if (status == std::string("completed")) content.push_back(text_part(text));
  return {{"id", id},
          {"type", "message"},
          {"status", status},
          {"role", "assistant"},
          {"content", std::move(content)}};
}

json reasoning_part(const std::string& text) {
  return {{"type", "reasoning_text"}, {"text", text}};
}

json reasoning_item(const std::string& id, const std::string& text, const char* status) {
  json content = json::array();
  if (status == std::string("completed")) content.push_back(reasoning_part(text));
  return {{"id", id},
          {"type", "reasoning"},
          {"summary", json::array()},
          {"content", std::move(content)},
          {"status", status}};
}

json call_item(const std::string& id, const std::string& call_id, const std::string& name,
               const std::string& arguments, const char* status) {
  return {{"id", id},     {"type", "function_call"}, {"status", status}, {"call_id", call_id},
          {"name", name}, {"arguments", arguments}};
}

json usage_object(const Usage& u) {
  return {{"input_tokens", u.prompt_tokens},
          // The prefix cache fills itself and bills nothing: no tokens are written on request.
          {"input_tokens_details",
           {{"cached_tokens", u.cached_prompt_tokens}, {"cache_write_tokens", 0}}},
          {"output_tokens", u.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json echoed(const ResponsesContext& ctx, const char* key, json fallback) {
  auto it = ctx.echo.find(key);
  return it == ctx.echo.end() ? std::move(fallback) : *it;
}

// The whole object; `usage` null while in progress.
json response_object(const ResponsesContext& ctx, const char* status, json output, json usage,
                     json incomplete_details = nullptr, json error = nullptr) {
  return {{"id", ctx.id},
          {"object", "response"},
          {"created_at", ctx.created},
          {"status", status},
          {"background", false},
          {"error", std::move(error)},
          {"incomplete_details", std::move(incomplete_details)},
          {"instructions", echoed(ctx, "instructions", nullptr)},
          {"max_output_tokens", echoed(ctx, "max_output_tokens", nullptr)},
          {"model", ctx.model},
          {"output", std::move(output)},
          {"parallel_tool_calls", echoed(ctx, "parallel_tool_calls", true)},
          {"previous_response_id", nullptr},
          {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
          {"store", false},
          {"temperature", ctx.temperature},
          {"text", echoed(ctx, "text", {{"format", {{"type", "text"}}}})},
          {"tool_choice", echoed(ctx, "tool_choice", "auto")},
          {"tools", echoed(ctx, "tools", json::array())},
          {"top_p", ctx.top_p},
          {"truncation", "disabled"},
          {"usage", std::move(usage)},
          {"user", echoed(ctx, "user", nullptr)},
          {"metadata", echoed(ctx, "metadata", json::object())}};
}

// Chat's finish_reason as a Response status and its incomplete_details.
const char* status_of(const std::string& finish, json* incomplete_details) {
  if (finish == "length") {
    *incomplete_details = {{"reason", "max_output_tokens"}};
    return "incomplete";
  }
  if (finish == "abort" || finish == "timeout") {
    *incomplete_details = {{"reason", finish}};
    return "incomplete";
  }
  return "completed";
}

}  // namespace

std::string responses_id(const std::string& request_id) {
  const uint64_t a = std::hash<std::string>{}(request_id);
  const uint64_t b = std::hash<std::string>{}(request_id + "#responses");
  return "resp_" + hex(a, 16) + hex(b, 8);
}

json response_from_chat(const ResponsesContext& ctx, const nlohmann::json& chat,
                        const Usage& usage) {
  json output = json::array();
  std::string finish;
  if (chat.contains("choices") && !chat["choices"].empty()) {
    const nlohmann::json& choice = chat["choices"][0];
    if (choice["finish_reason"].is_string()) finish = choice["finish_reason"].get<std::string>();
    const nlohmann::json& m = choice["message"];
    const std::string text = m["content"].is_string() ? m["content"].get<std::string>() : "";
    const bool calls = m.contains("tool_calls") && !m["tool_calls"].empty();
    const bool reasoning = m.contains("reasoning_content") && m["reasoning_content"].is_string();
    if (reasoning) {
      output.push_back(reasoning_item(item_id(ctx, "rs_", output.size()),
                                      m["reasoning_content"].get<std::string>(), "completed"));
    }
    if (!text.empty() || (!calls && !reasoning)) {
      output.push_back(message_item(item_id(ctx, "msg_", output.size()), text, "completed"));
    }
    if (calls) {
      for (const auto& c : m["tool_calls"]) {
        output.push_back(call_item(item_id(ctx, "fc_", output.size()), c["id"],
                                   c["function"]["name"], c["function"]["arguments"], "completed"));
      }
    }
  }
  json incomplete = nullptr;
  const char* status = status_of(finish, &incomplete);
  return response_object(ctx, status, std::move(output), usage_object(usage),
                         std::move(incomplete));
}

json ResponsesEvents::event(const char* type) {
  return {{"type", type}, {"sequence_number", sequence_++}};
}

json ResponsesEvents::text_delta(const char* type, const std::string& piece) {
  text_ += piece;
  json e = event(type);
  e["item_id"] = item_id_;
  e["output_index"] = output_.size();
  e["content_index"] = 0;
  e["delta"] = piece;
  return e;
}

std::vector<json> ResponsesEvents::start() {
  std::vector<json> out;
  for (const char* type : {"response.created", "response.in_progress"}) {
    json e = event(type);
    e["response"] = response_object(ctx_, "in_progress", json::array(), nullptr);
    out.push_back(std::move(e));
  }
  return out;
}

json ResponsesEvents::open_item() const {
  if (open_ == Open::kMessage) return message_item(item_id_, text_, "in_progress");
  if (open_ == Open::kReasoning) return reasoning_item(item_id_, text_, "in_progress");
  return call_item(item_id_, call_id_, name_, text_, "in_progress");
}

void ResponsesEvents::open_message(std::vector<json>& out) {
  open_text_item(out, Open::kMessage, "msg_", text_part(""));
}

void ResponsesEvents::open_reasoning(std::vector<json>& out) {
  open_text_item(out, Open::kReasoning, "rs_", reasoning_part(""));
}

void ResponsesEvents::open_text_item(std::vector<json>& out, Open kind, const char* id_prefix,
                                     json empty_part) {
  open_ = kind;
  item_id_ = item_id(ctx_, id_prefix, output_.size());
  text_.clear();
  json added = event("response.output_item.added");
  added["output_index"] = output_.size();
  added["item"] = open_item();
  out.push_back(std::move(added));
  json part = event("response.content_part.added");
  part["item_id"] = item_id_;
  part["output_index"] = output_.size();
  part["content_index"] = 0;
  part["part"] = std::move(empty_part);
  out.push_back(std::move(part));
}

void ResponsesEvents::close_item(std::vector<json>& out) {
  if (open_ == Open::kNone) return;
  const size_t index = output_.size();
  json item;
  if (open_ == Open::kReasoning) {
    json done = event("response.reasoning_text.done");
    done["item_id"] = item_id_;
    done["output_index"] = index;
    done["content_index"] = 0;
    done["text"] = text_;
    out.push_back(std::move(done));
    json part = event("response.content_part.done");
    part["item_id"] = item_id_;
    part["output_index"] = index;
    part["content_index"] = 0;
    part["part"] = reasoning_part(text_);
    out.push_back(std::move(part));
    item = reasoning_item(item_id_, text_, "completed");
  } else if (open_ == Open::kMessage) {
    json done = event("response.output_text.done");
    done["item_id"] = item_id_;
    done["output_index"] = index;
    done["content_index"] = 0;
    done["text"] = text_;
    done["logprobs"] = json::array();
    out.push_back(std::move(done));
    json part = event("response.content_part.done");
    part["item_id"] = item_id_;
    part["output_index"] = index;
    part["content_index"] = 0;
    part["part"] = text_part(text_);
    out.push_back(std::move(part));
    item = message_item(item_id_, text_, "completed");
  } else {
    json done = event("response.function_call_arguments.done");
    done["item_id"] = item_id_;
    done["output_index"] = index;
    done["name"] = name_;
    done["arguments"] = text_;
    out.push_back(std::move(done));
    item = call_item(item_id_, call_id_, name_, text_, "completed");
  }
  json item_done = event("response.output_item.done");
  item_done["output_index"] = index;
  item_done["item"] = item;
  out.push_back(std::move(item_done));
  output_.push_back(std::move(item));
  open_ = Open::kNone;
}

std::vector<json> ResponsesEvents::on_chunk(const nlohmann::json& chunk) {
  std::vector<json> out;
  if (!chunk.contains("choices") || chunk["choices"].empty()) return out;
  const nlohmann::json& choice = chunk["choices"][0];
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
    finish_reason_ = choice["finish_reason"].get<std::string>();
  }
  if (!choice.contains("delta")) return out;
  const nlohmann::json& delta = choice["delta"];
  if (delta.contains("reasoning_content") && delta["reasoning_content"].is_string()) {
    if (open_ != Open::kReasoning) {
      close_item(out);
      open_reasoning(out);
    }
    out.push_back(
        text_delta("response.reasoning_text.delta", delta["reasoning_content"].get<std::string>()));
  }
  if (delta.contains("content") && delta["content"].is_string() &&
      !delta["content"].get<std::string>().empty()) {
    if (open_ != Open::kMessage) {
      close_item(out);
      open_message(out);
    }
    json e = text_delta("response.output_text.delta", delta["content"].get<std::string>());
    e["logprobs"] = json::array();
    out.push_back(std::move(e));
  }
  if (!delta.contains("tool_calls")) return out;
  for (const auto& tc : delta["tool_calls"]) {
    if (tc.contains("id")) {  // a call's header: a new item
      close_item(out);
      open_ = Open::kCall;
      item_id_ = item_id(ctx_, "fc_", output_.size());
      call_id_ = tc["id"].get<std::string>();
      name_ = tc["function"]["name"].get<std::string>();
      text_.clear();
      json added = event("response.output_item.added");
      added["output_index"] = output_.size();
      added["item"] = open_item();
      out.push_back(std::move(added));
    }
    if (open_ != Open::kCall || !tc.contains("function")) continue;
    const std::string args = tc["function"].value("arguments", "");
    if (args.empty()) continue;
    text_ += args;
    json e = event("response.function_call_arguments.delta");
    e["item_id"] = item_id_;
    e["output_index"] = output_.size();
    e["delta"] = args;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<json> ResponsesEvents::finish(const Usage& usage, const Status& error) {
  std::vector<json> out;
  if (!error.is_ok()) {
    close_item(out);
    json e = event("response.failed");
    e["response"] = response_object(ctx_, "failed", output_, usage_object(usage), nullptr,
                                    {{"code", "server_error"}, {"message", error.message()}});
    out.push_back(std::move(e));
    return out;
  }
  if (output_.empty() && open_ == Open::kNone) open_message(out);  // an empty reply
  close_item(out);
  json incomplete = nullptr;
  const char* status = status_of(finish_reason_, &incomplete);
  json e = event(status == std::string("completed") ? "response.completed" : "response.incomplete");
  e["response"] =
      response_object(ctx_, status, output_, usage_object(usage), std::move(incomplete));
  out.push_back(std::move(e));
  return out;
}

std::string responses_sse(const json& event) {
  return "event: " + event.value("type", std::string("message")) +
         "\ndata: " + event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace llmserve
