// Turns the SSE events of one streamed OpenAI /v1/completions response into a RequestResult:
// TTFT at the first chunk whose choice carries text, ITL between such chunks, tokens from the
// final usage chunk (stream_options.include_usage), failure on an error event or a missing
// "[DONE]". Times are seconds since the request was sent, supplied by the caller.
#pragma once

#include <string_view>

#include "bench/serve/request_result.h"

namespace llmserve::bench {

class OpenAiStreamAccumulator {
 public:
  // `expected_prompt_tokens` is used when the server reports no usage.
  explicit OpenAiStreamAccumulator(int expected_prompt_tokens);

  // One SSE event's data, received `t_s` seconds after the request was sent.
  void on_event(std::string_view data, double t_s);
  // The stream ended (or broke) at `t_s`; `transport_error` is empty when it ended cleanly.
  RequestResult finish(double t_s, const std::string& transport_error);

 private:
  void fail(std::string why);

  RequestResult r_;
  int chunks_with_tokens_ = 0;
  double last_token_t_ = 0;
  bool got_usage_ = false;
  bool done_ = false;
};

}  // namespace llmserve::bench
