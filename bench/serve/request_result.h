// What one benchmark request measured. Times are seconds on the steady clock.
#pragma once

#include <string>
#include <vector>

namespace llmserve::bench {

struct RequestResult {
  bool success = false;
  std::string error;           // why it failed (HTTP status and body, transport or gRPC error)
  double start_s = 0;          // when the request was sent, relative to the benchmark start
  double ttft_s = 0;           // send -> first chunk that carries generated tokens
  double latency_s = 0;        // send -> end of stream (e2e)
  std::vector<double> itl_s;   // gaps between consecutive token-carrying chunks
  int prompt_tokens = 0;       // from usage (or the request's own length when usage lacks it)
  int output_tokens = 0;       // from usage (or the count of token-carrying chunks)
  std::string generated_text;  // concatenated text deltas
};

}  // namespace llmserve::bench
