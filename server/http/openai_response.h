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

namespace llmserve {

enum class ApiKind { kCompletion, kChat };

struct ResponseContext {
  ApiKind kind = ApiKind::kCompletion;
  std::string id;
  std::string model;
  int64_t created = 0;  // unix seconds
  int32_t n = 1;
  size_t num_prompts = 1;
  int32_t logprobs = -1;  // -1 = none; else the top-N asked for
  bool include_usage = false;
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
  nlohmann::json final_response() const;

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
    size_t bytes = 0;  // for text_offset
  };

  size_t choice_index(size_t prompt_index, const StepOutput& out) const;
  void note_usage(size_t prompt_index, const StepOutput& out);
  nlohmann::json chunk_base() const;
  nlohmann::json logprobs_json(const std::vector<TokenLogprob>& lps,
                               const std::vector<size_t>& offsets) const;
  std::string token_string(int32_t id) const;

  ResponseContext ctx_;
  std::vector<Choice> choices_;
  std::vector<Usage> usage_;  // per prompt, latest totals
  Status error_;
};

nlohmann::json usage_json(const Usage& u);

}  // namespace llmserve
