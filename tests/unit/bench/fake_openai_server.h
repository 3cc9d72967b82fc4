// An in-process stand-in for an OpenAI-compatible server: POST /v1/completions streams
// `max_tokens` one-token text chunks with scripted delays, then a usage chunk and [DONE].
#pragma once

#include <httplib.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace llmserve::bench {

struct FakeScript {
  int first_delay_ms = 40;  // before the first token chunk
  int gap_ms = 10;          // between token chunks
  int status = 200;         // anything else: an OpenAI error body with this status
  std::string api_key;      // required as "Authorization: Bearer <key>" when non-empty
};

class FakeOpenAiServer {
 public:
  explicit FakeOpenAiServer(FakeScript script);
  ~FakeOpenAiServer();

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests_seen() const { return seen_.load(); }
  int max_in_flight() const { return max_in_flight_.load(); }
  std::vector<nlohmann::json> bodies() const;

 private:
  void handle(const httplib::Request& req, httplib::Response& res);

  FakeScript script_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> seen_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
  mutable std::mutex mu_;
  std::vector<nlohmann::json> bodies_;
};

}  // namespace llmserve::bench
