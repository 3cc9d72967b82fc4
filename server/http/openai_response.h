// Engine outputs -> OpenAI response JSON: streaming chunks ("text_completion" /
// "chat.completion.chunk") and the final non-streaming body ("text_completion" /
// "chat.completion"). Choice index = prompt_index * n + sample index.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/generate_request.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/common/reasoning_parser.h"
#include "server/common/tool_calls.h"
#include "server/http/logprobs_text.h"

namespace llmserve {

enum class ApiKind { kCompletion, kChat };

struct ResponseContext {
  ApiKind kind = ApiKind::kCompletion;
  std::string id;
  std::string model;
  int64_t created = 0;  // unix seconds
  int32_t n = 1;
  size_t num_prompts = 1;
  int32_t logprobs = -1;         // -1 = none; else the top-N asked for
  int32_t prompt_logprobs = -1;  // vLLM's prompt_logprobs: N, or -1 = none
  // Completions with echo: each prompt's text and ids come back before its completion (with
  // logprobs, the prompt tokens' logprobs first, the first one null).
  bool echo = false;
  std::vector<std::string> echo_texts;
  std::vector<std::vector<int32_t>> prompt_ids;
  bool include_usage = false;
  // Chat with tools: the text is a reply in the generic tool format (server/common/tool_calls.h),
  // held back while streaming and sent as tool_calls (finish_reason "tool_calls") or content.
  bool tools = false;
  ToolFormat tool_format = ToolFormat::kGeneric;
  // Chat with a reasoning parser: the reply's <think> block goes to message.reasoning_content
  // and .reasoning (delta.* streaming; both null when there was none); tools read the rest.
  ReasoningStart reasoning = ReasoningStart::kOff;
  const Tokenizer* tokenizer = nullptr;  // for logprob token strings; may be null
};

class ResponseBuilder {
 public:
  explicit ResponseBuilder(ResponseContext ctx);

  // Streaming: the chunks one engine output produces (possibly none).
  std::vector<nlohmann::json> chunks_for(size_t prompt_index, const StepOutput& out);
  // Streaming: the trailing {"choices": [], "usage": ...} chunk when include_usage is set.
  std::optional<nlohmann::json> usage_chunk() const;

  // Non-streaming: remember one output; then the whole body.
  void accumulate(size_t prompt_index, const StepOutput& out);
  // The body as JSON text in pieces, built without a JSON tree of the logprobs (final_body.cpp):
  // the head, one piece per choice, the tail. Fills `piece` and returns true until all were
  // given. Each prompt's prompt_logprobs are written once and copied into its n choices.
  bool next_body_piece(std::string* piece);
  std::string final_body();         // every piece at once
  nlohmann::json final_response();  // final_body() parsed

  Usage total_usage() const;  // summed over prompts
  // The first error an output carried (FinishReason::kError), OK when none.
  const Status& error() const { return error_; }

 private:
  struct Choice {
    std::string text;
    std::vector<TokenLogprob> logprobs;
    std::vector<size_t> text_offsets;
    FinishReason finish = FinishReason::kNone;
    std::string stop_reason;
    bool role_sent = false;
    std::string held;  // tools, streaming: the reply text until the sample ends
    std::optional<ReasoningSplitter> splitter;  // reasoning, streaming
    bool echo_sent = false;
    size_t bytes = 0;  // for text_offset
  };

  size_t choice_index(size_t prompt_index, const StepOutput& out) const;
  void note_usage(size_t prompt_index, const StepOutput& out);
  nlohmann::json chunk_base() const;
  nlohmann::json logprobs_json(const std::vector<TokenLogprob>& lps,
                               const std::vector<size_t>& offsets) const;
  std::string token_string(int32_t id) const;
  // The echoed prompt of one choice: its text, and with logprobs its tokens' legacy logprobs
  // (offsets from 0; `bytes` gets their total).
  std::string echo_text(size_t prompt_index) const;
  nlohmann::json echo_logprobs(size_t prompt_index, size_t* bytes) const;
  nlohmann::json chat_choice(size_t i) const;  // a chat.completion choice
  std::string completion_choice(size_t i);     // a text_completion choice, as JSON text
  const std::string& prompt_logprobs_text(size_t prompt_index);  // vLLM's shape, memoized

  ResponseContext ctx_;
  std::vector<Choice> choices_;
  std::vector<Usage> usage_;                           // per prompt, latest totals
  std::vector<std::vector<TokenLogprob>> prompt_lps_;  // per prompt: positions 1..
  Status error_;
  std::optional<nlohmann::json> kv_transfer_params_;  // a producer's handoff (non-streaming)
  // final body: the next piece to give; token texts escaped so far; the last prompt's
  // prompt_logprobs text (choices of one prompt come together).
  size_t body_cursor_ = 0;
  TokenTexts texts_;
  size_t prompt_lps_text_of_ = SIZE_MAX;
  std::string prompt_lps_text_;
};

nlohmann::json usage_json(const Usage& u);
// Two legacy (completions) logprobs objects as one: a's entries, then b's.
nlohmann::json concat_logprobs(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace llmserve
