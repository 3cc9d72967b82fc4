// The engine's output for one /v1/messages request as Anthropic's Messages API gives it: the
// stream's events, and the same blocks assembled into the Message object.
//   message_start (usage so far), ping,
//   per block: content_block_start, content_block_delta..., content_block_stop
//     thinking  (a reasoning parser's block)   thinking_delta
//     text      (the reply)                     text_delta
//     tool_use  (a tool call)                   input_json_delta: the arguments' JSON text as it
//                                               is generated (the generic and Hermes tool
//                                               formats, read by ToolReplyStream; Mistral's:
//                                               the whole arguments once the reply ended)
//   message_delta (stop_reason, stop_sequence, usage), message_stop;
//   or, when generation failed after the stream began, an `error` event.
// stop_reason: end_turn, max_tokens, stop_sequence (with the string in stop_sequence), tool_use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/generate_request.h"
#include "server/anthropic/tool_reply_stream.h"
#include "server/common/reasoning_parser.h"
#include "server/common/tool_calls.h"

namespace llmserve {

struct MessageContext {
  std::string id;  // "msg_..."
  std::string model;
  bool tools = false;  // tools offered and not tool_choice none
  ToolFormat tool_format = ToolFormat::kGeneric;
  ReasoningStart reasoning = ReasoningStart::kOff;
  std::vector<std::string> stop_sequences;
};

// "msg_" + 24 hex digits from the request id; tool use ids "toolu_" + 24 hex digits.
std::string message_id(const std::string& request_id);

// Usage in Anthropic's terms: input_tokens are the prompt tokens computed for this request
// (the rest, served from the prefix cache, are cache_read_input_tokens); nothing is written to
// a cache on request, so cache_creation_input_tokens is 0.
nlohmann::ordered_json anthropic_usage(const Usage& u);

class MessageEvents {
 public:
  explicit MessageEvents(MessageContext ctx);

  // One engine output: message_start and ping first (once), then the deltas it brings; the
  // output that ends the reply closes the open block.
  std::vector<nlohmann::ordered_json> on_output(const StepOutput& out);
  // message_delta and message_stop, or an error event when `error` is set.
  std::vector<nlohmann::ordered_json> finish(const Status& error);

  // The Message object (non-streaming): every block as the events built it.
  nlohmann::ordered_json message() const;
  bool started() const { return started_; }
  const Usage& usage() const { return usage_; }

 private:
  enum class Block { kNone, kText, kThinking, kToolUse };
  void start(std::vector<nlohmann::ordered_json>& ev);
  void open(std::vector<nlohmann::ordered_json>& ev, Block kind, const std::string& name = "");
  void close(std::vector<nlohmann::ordered_json>& ev);
  void text(std::vector<nlohmann::ordered_json>& ev, const std::string& piece);
  void thinking(std::vector<nlohmann::ordered_json>& ev, const std::string& piece);
  void arguments(std::vector<nlohmann::ordered_json>& ev, const std::string& piece);
  void tool_pieces(std::vector<nlohmann::ordered_json>& ev,
                   const std::vector<ToolStreamPiece>& pieces);
  void content(std::vector<nlohmann::ordered_json>& ev, const std::string& piece);
  void end_reply(std::vector<nlohmann::ordered_json>& ev, const StepOutput& out);
  nlohmann::ordered_json message_object(bool done) const;

  MessageContext ctx_;
  bool started_ = false;
  Usage usage_;
  Block open_ = Block::kNone;
  nlohmann::ordered_json blocks_ = nlohmann::ordered_json::array();
  std::string args_;  // the open tool_use block's arguments text
  int tool_uses_ = 0;
  std::optional<ReasoningSplitter> splitter_;
  ToolReplyStream tool_stream_;
  std::string held_;  // tools in a format other than the generic one: the reply until it ends
  std::string stop_reason_;
  std::optional<std::string> stop_sequence_;
};

// One event as SSE: "event: <type>\ndata: <json>\n\n" (never throws).
std::string anthropic_sse(const nlohmann::ordered_json& event);

}  // namespace llmserve
