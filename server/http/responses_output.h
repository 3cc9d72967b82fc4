// The chat path's output as OpenAI Responses API objects: the Response object ("response":
// output items of type reasoning (reasoning_text content), message (output_text content) and
// function_call, status, usage, incomplete_details) made from a chat.completion body, and,
// streaming, the typed events made from chat.completion.chunk objects:
//   response.created, response.in_progress,
//   per message: response.output_item.added, response.content_part.added,
//     response.output_text.delta..., response.output_text.done, response.content_part.done,
//     response.output_item.done;
//   per reasoning block (a reasoning parser's reasoning_content): response.output_item.added,
//     response.content_part.added, response.reasoning_text.delta...,
//     response.reasoning_text.done, response.content_part.done, response.output_item.done;
//   per function call: response.output_item.added, response.function_call_arguments.delta...,
//     response.function_call_arguments.done, response.output_item.done;
//   response.completed (response.incomplete when cut short, response.failed on an error),
// each with its sequence_number from 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/generate_request.h"

namespace llmserve {

struct ResponsesContext {
  std::string id;  // "resp_..."
  std::string model;
  int64_t created = 0;  // unix seconds
  // Request fields the object repeats (ResponsesTranslation::echo) and the sampling in force.
  nlohmann::ordered_json echo = nlohmann::ordered_json::object();
  double temperature = 1.0;
  double top_p = 1.0;
};

// "resp_" + 24 hex digits made from `request_id` (unique per request).
std::string responses_id(const std::string& request_id);

// The Response object: status "completed", or "incomplete" with incomplete_details when the
// chat finish_reason says the reply was cut short ("length" -> max_output_tokens).
nlohmann::ordered_json response_from_chat(const ResponsesContext& ctx,
                                          const nlohmann::json& chat_completion,
                                          const Usage& usage);

// Streaming: chat.completion.chunk objects (one choice, n = 1) in, Responses events out.
class ResponsesEvents {
 public:
  explicit ResponsesEvents(ResponsesContext ctx) : ctx_(std::move(ctx)) {}

  std::vector<nlohmann::ordered_json> start();  // response.created, response.in_progress
  std::vector<nlohmann::ordered_json> on_chunk(const nlohmann::json& chat_chunk);
  // Closes the open item and ends with response.completed / incomplete / failed.
  std::vector<nlohmann::ordered_json> finish(const Usage& usage, const Status& error);

 private:
  enum class Open { kNone, kReasoning, kMessage, kCall };
  nlohmann::ordered_json event(const char* type);
  // A delta event of the open item's text (its piece appended to text_).
  nlohmann::ordered_json text_delta(const char* type, const std::string& piece);
  nlohmann::ordered_json open_item() const;  // the open item, as it stands
  void open_message(std::vector<nlohmann::ordered_json>& out);
  void open_reasoning(std::vector<nlohmann::ordered_json>& out);
  // Opens a message or reasoning item: output_item.added, then content_part.added with empty_part.
  void open_text_item(std::vector<nlohmann::ordered_json>& out, Open kind, const char* id_prefix,
                      nlohmann::ordered_json empty_part);
  void close_item(std::vector<nlohmann::ordered_json>& out);

  ResponsesContext ctx_;
  int64_t sequence_ = 0;
  nlohmann::ordered_json output_ = nlohmann::ordered_json::array();  // items done
  Open open_ = Open::kNone;
  std::string item_id_, text_, call_id_, name_;
  std::string finish_reason_;
};

// One event as SSE: "event: <type>\ndata: <json>\n\n" (never throws).
std::string responses_sse(const nlohmann::ordered_json& event);

}  // namespace llmserve
