// Everything `llmserve bench` was asked to do (the flags, parsed).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace llmserve::bench {

struct BenchConfig {
  std::string url = "http://127.0.0.1:8000";  // OpenAI-compatible server (used unless grpc set)
  std::string grpc;                           // "host:port": use gRPC Generate instead of HTTP
  std::string api_key;
  std::string model;
  int num_requests = 100;
  int max_concurrency = 0;  // 0 = unlimited
  double request_rate = std::numeric_limits<double>::infinity();
  int input_len = 128;
  int output_len = 128;
  double random_range_ratio = 0;
  int shared_prefix_len = 0;
  std::string dataset;  // JSONL prompts; overrides the synthetic workload
  int32_t token_id_min = 1000;
  int32_t token_id_max = 10000;
  int warmup = 0;
  uint64_t seed = 0;
  std::string goodput;  // "ttft:500,tpot:50,e2el:10000"
  double timeout_s = 600;
  std::string json_out;
  bool progress = true;  // shown only when stderr is a terminal
};

}  // namespace llmserve::bench
