#include "server/anthropic/message_events.h"

#include <algorithm>
#include <functional>

namespace llmserve {

using json = nlohmann::ordered_json;

namespace {

std::string hex24(uint64_t a, uint64_t b) {
  static const char* kDigits = "0123456789abcdef";
  std::string s(24, '0');
  for (int i = 0; i < 16; ++i) s[static_cast<size_t>(i)] = kDigits[(a >> (4 * (15 - i))) & 15];
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(16 + i)] = kDigits[(b >> (4 * (7 - i))) & 15];
  return s;
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

}  // namespace

std::string message_id(const std::string& request_id) {
  const uint64_t h = std::hash<std::string>{}(request_id);
  return "msg_" + hex24(mix(h), mix(h ^ 0x9E3779B97F4A7C15ull));
}

json anthropic_usage(const Usage& u) {
  const int32_t cached = std::min(u.cached_prompt_tokens, u.prompt_tokens);
  return {{"input_tokens", u.prompt_tokens - cached},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", cached},
          {"output_tokens", u.completion_tokens}};
}

MessageEvents::MessageEvents(MessageContext ctx)
    : ctx_(std::move(ctx)), tool_stream_(ctx_.tool_format == ToolFormat::kHermes) {
  if (ctx_.reasoning != ReasoningStart::kOff) splitter_.emplace(ctx_.reasoning);
}

json MessageEvents::message_object(bool done) const {
  json m = {{"id", ctx_.id},
            {"type", "message"},
            {"role", "assistant"},
            {"model", ctx_.model},
            {"content", done ? blocks_ : json::array()},
            {"stop_reason", done && !stop_reason_.empty() ? json(stop_reason_) : json()},
            {"stop_sequence", done && stop_sequence_ ? json(*stop_sequence_) : json()},
            {"usage", anthropic_usage(usage_)}};
  return m;
}

json MessageEvents::message() const {
  return message_object(true);
}

void MessageEvents::start(std::vector<json>& ev) {
  if (started_) return;
  started_ = true;
  ev.push_back({{"type", "message_start"}, {"message", message_object(false)}});
  ev.push_back({{"type", "ping"}});
}

void MessageEvents::open(std::vector<json>& ev, Block kind, const std::string& name) {
  close(ev);
  json block;
  if (kind == Block::kText) {
    block = {{"type", "text"}, {"text", ""}};
  } else if (kind == Block::kThinking) {
    block = {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}};
  } else {
    const uint64_t h = std::hash<std::string>{}(ctx_.id);
    const auto n = static_cast<uint64_t>(tool_uses_++);
    block = {{"type", "tool_use"},
             {"id", "toolu_" + hex24(mix(h + n), mix(h ^ (n * 0x9E3779B97F4A7C15ull + 1)))},
             {"name", name},
             {"input", json::object()}};
    args_.clear();
  }
  ev.push_back(
      {{"type", "content_block_start"}, {"index", blocks_.size()}, {"content_block", block}});
  blocks_.push_back(std::move(block));
  open_ = kind;
}

void MessageEvents::close(std::vector<json>& ev) {
  if (open_ == Block::kNone) return;
  if (open_ == Block::kToolUse) {
    // The arguments as the input object (an argument text cut short stays {}).
    json input = json::parse(args_, nullptr, false);
    if (input.is_object()) blocks_.back()["input"] = std::move(input);
  }
  ev.push_back({{"type", "content_block_stop"}, {"index", blocks_.size() - 1}});
  open_ = Block::kNone;
}

void MessageEvents::text(std::vector<json>& ev, const std::string& piece) {
  if (piece.empty()) return;
  if (open_ != Block::kText) open(ev, Block::kText);
  blocks_.back()["text"] = blocks_.back()["text"].get<std::string>() + piece;
  ev.push_back({{"type", "content_block_delta"},
                {"index", blocks_.size() - 1},
                {"delta", {{"type", "text_delta"}, {"text", piece}}}});
}

void MessageEvents::thinking(std::vector<json>& ev, const std::string& piece) {
  if (piece.empty()) return;
  if (open_ != Block::kThinking) open(ev, Block::kThinking);
  blocks_.back()["thinking"] = blocks_.back()["thinking"].get<std::string>() + piece;
  ev.push_back({{"type", "content_block_delta"},
                {"index", blocks_.size() - 1},
                {"delta", {{"type", "thinking_delta"}, {"thinking", piece}}}});
}

void MessageEvents::arguments(std::vector<json>& ev, const std::string& piece) {
  if (piece.empty() || open_ != Block::kToolUse) return;
  args_ += piece;
  ev.push_back({{"type", "content_block_delta"},
                {"index", blocks_.size() - 1},
                {"delta", {{"type", "input_json_delta"}, {"partial_json", piece}}}});
}

void MessageEvents::tool_pieces(std::vector<json>& ev, const std::vector<ToolStreamPiece>& pieces) {
  for (const ToolStreamPiece& p : pieces) {
    switch (p.kind) {
      case ToolStreamPiece::Kind::kText:
        text(ev, p.text);
        break;
      case ToolStreamPiece::Kind::kCallStart:
        open(ev, Block::kToolUse, p.text);
        break;
      case ToolStreamPiece::Kind::kArguments:
        arguments(ev, p.text);
        break;
      case ToolStreamPiece::Kind::kCallEnd:
        close(ev);
        break;
    }
  }
}

void MessageEvents::content(std::vector<json>& ev, const std::string& piece) {
  if (!ctx_.tools) return text(ev, piece);
  if (ctx_.tool_format == ToolFormat::kGeneric || ctx_.tool_format == ToolFormat::kHermes) {
    return tool_pieces(ev, tool_stream_.feed(piece));
  }
  held_ += piece;
}

void MessageEvents::end_reply(std::vector<json>& ev, const StepOutput& out) {
  bool called = false;
  if (ctx_.tools &&
      (ctx_.tool_format == ToolFormat::kGeneric || ctx_.tool_format == ToolFormat::kHermes)) {
    std::string unparsed;
    tool_pieces(ev, tool_stream_.finish(&unparsed));
    text(ev, unparsed);
    called = tool_stream_.saw_call();
  } else if (ctx_.tools) {
    const ToolReply reply = parse_tool_reply(held_, 0, ctx_.tool_format);
    text(ev, reply.content);
    for (const ToolCall& c : reply.calls) {
      open(ev, Block::kToolUse, c.name);
      arguments(ev, c.arguments);
      close(ev);
    }
    called = reply.is_call();
  }
  close(ev);
  if (out.finish == FinishReason::kLength) {
    stop_reason_ = "max_tokens";
  } else if (called) {
    stop_reason_ = "tool_use";
  } else if (out.finish == FinishReason::kStop && !out.stop_reason.empty() &&
             std::find(ctx_.stop_sequences.begin(), ctx_.stop_sequences.end(), out.stop_reason) !=
                 ctx_.stop_sequences.end()) {
    stop_reason_ = "stop_sequence";
    stop_sequence_ = out.stop_reason;
  } else {
    stop_reason_ = "end_turn";
  }
}

std::vector<json> MessageEvents::on_output(const StepOutput& out) {
  std::vector<json> ev;
  usage_ = out.usage;
  if (out.finish == FinishReason::kError) return ev;  // finish() reports it
  start(ev);
  const bool last = out.finish != FinishReason::kNone;
  std::string reply = out.text;
  if (splitter_) {
    ReasoningPieces p = splitter_->feed(out.text);
    if (last) {
      ReasoningPieces tail = splitter_->finish();
      p.reasoning += tail.reasoning;
      p.content += tail.content;
    }
    thinking(ev, p.reasoning);
    reply = std::move(p.content);
  }
  content(ev, reply);
  if (last) end_reply(ev, out);
  return ev;
}

std::vector<json> MessageEvents::finish(const Status& error) {
  std::vector<json> ev;
  if (!error.is_ok()) {
    const bool overloaded =
        error.code() == StatusCode::kResourceExhausted || error.code() == StatusCode::kUnavailable;
    ev.push_back({{"type", "error"},
                  {"error",
                   {{"type", overloaded ? "overloaded_error" : "api_error"},
                    {"message", error.message()}}}});
    return ev;
  }
  start(ev);
  close(ev);
  if (stop_reason_.empty()) stop_reason_ = "end_turn";
  ev.push_back({{"type", "message_delta"},
                {"delta",
                 {{"stop_reason", stop_reason_},
                  {"stop_sequence", stop_sequence_ ? json(*stop_sequence_) : json()}}},
                {"usage", anthropic_usage(usage_)}});
  ev.push_back({{"type", "message_stop"}});
  return ev;
}

std::string anthropic_sse(const json& event) {
  return "event: " + event.value("type", std::string("message")) +
         "\ndata: " + event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace llmserve
