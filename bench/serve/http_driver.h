// Sends one benchmark request to an OpenAI-compatible /v1/completions endpoint as a stream
// (`stream: true`, `stream_options.include_usage`) on its own connection and measures it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/serve/request_result.h"
#include "bench/serve/workload.h"
#include "engine/core/status.h"

namespace llmserve::bench {

struct HttpTarget {
  std::string scheme_host_port;  // "http://127.0.0.1:8000"
  std::string path = "/v1/completions";
  std::string api_key;     // sent as "Authorization: Bearer ..." when non-empty
  std::string model;       // the "model" field when non-empty
  double timeout_s = 600;  // connect and per-read timeout
};

// "http://host:port[/path]" -> target (path defaults to /v1/completions).
Result<HttpTarget> parse_http_url(const std::string& url);

// The JSON body for one request: prompt (token ids or text), max_tokens, ignore_eos,
// temperature 0, stream with usage.
nlohmann::json completion_body(const HttpTarget& target, const BenchRequest& req);

// Blocks until the stream ends. Never throws; failures come back in the result.
RequestResult send_http_completion(const HttpTarget& target, const BenchRequest& req);

}  // namespace llmserve::bench
