#include "server/metrics/server_metrics.h"

#include <unistd.h>

#include <chrono>
#include <fstream>

#include "server/metrics/prometheus_writer.h"

namespace llmserve {

ServerMetrics::ServerMetrics()
    : start_time_seconds_(
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count()) {}

void ServerMetrics::count_http(const std::string& route, int code) {
  std::lock_guard lock(mu_);
  http_[{route, std::to_string(code)}]++;
}

void ServerMetrics::count_grpc(const std::string& method, const std::string& code) {
  std::lock_guard lock(mu_);
  grpc_[{method, code}]++;
}

void ServerMetrics::count_rejection(const std::string& reason) {
  std::lock_guard lock(mu_);
  rejected_[reason]++;
}

uint64_t process_resident_memory_bytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

std::string ServerMetrics::render(const EngineStats& s, const EngineMetrics* m) const {
  PrometheusWriter w;
  w.gauge("llmserve_requests_running", "Requests in the running batch.",
          static_cast<double>(s.requests_running));
  w.gauge("llmserve_requests_waiting", "Requests waiting to be scheduled.",
          static_cast<double>(s.requests_waiting));
  w.gauge("llmserve_kv_cache_usage_ratio", "KV-cache blocks held by requests / total blocks.",
          s.kv_cache_usage_ratio);
  w.gauge("llmserve_kv_cache_blocks_total", "Usable KV-cache blocks.",
          static_cast<double>(s.kv_blocks_total));
  w.gauge("llmserve_kv_cache_blocks_free", "Free or evictable KV-cache blocks.",
          static_cast<double>(s.kv_blocks_free));
  w.gauge("llmserve_kv_cache_capacity_tokens",
          "Tokens the usable KV-cache blocks hold (blocks x block size).",
          static_cast<double>(s.kv_capacity_tokens));
  w.gauge("llmserve_kv_cache_bytes_per_token",
          "KV-cache bytes one token takes over all layers (K and V, int8/fp8 scales included).",
          static_cast<double>(s.kv_bytes_per_token));
  w.counter("llmserve_prompt_tokens_total", "Prompt tokens processed.",
            static_cast<double>(s.prompt_tokens));
  w.counter("llmserve_generation_tokens_total", "Tokens generated.",
            static_cast<double>(s.generation_tokens));
  w.header("llmserve_requests_finished_total", "counter", "Finished requests by finish reason.");
  for (size_t r = 1; r < s.finished_by_reason.size(); ++r) {
    w.sample("llmserve_requests_finished_total",
             {{"reason", finish_reason_name(static_cast<FinishReason>(r))}},
             static_cast<double>(s.finished_by_reason[r]));
  }
  w.counter("llmserve_preemptions_total", "Requests preempted for lack of KV-cache blocks.",
            static_cast<double>(s.preemptions));
  w.counter("llmserve_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
            static_cast<double>(s.prefix_cache_queries));
  w.counter("llmserve_prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
            static_cast<double>(s.prefix_cache_hits));
  w.counter("llmserve_engine_steps_total", "Engine steps run.", static_cast<double>(s.steps));
  w.counter("llmserve_spec_decode_num_drafts_total",
            "Speculative checks: a request verifying drafts in a step.",
            static_cast<double>(s.spec_num_drafts));
  w.counter("llmserve_spec_decode_num_draft_tokens_total", "Draft tokens verified.",
            static_cast<double>(s.spec_num_draft_tokens));
  w.counter("llmserve_spec_decode_num_accepted_tokens_total", "Draft tokens accepted.",
            static_cast<double>(s.spec_num_accepted_tokens));
  w.header("llmserve_spec_decode_num_accepted_tokens_per_pos_total", "counter",
           "Draft tokens accepted by position in their check (0 = the first draft).");
  for (size_t p = 0; p < s.spec_accepted_per_position.size(); ++p) {
    w.sample("llmserve_spec_decode_num_accepted_tokens_per_pos_total",
             {{"position", std::to_string(p)}},
             static_cast<double>(s.spec_accepted_per_position[p]));
  }
  w.counter("llmserve_grammar_compiles_total",
            "Structured-output grammars compiled (cache misses), errors included.",
            static_cast<double>(s.grammar_compiles));
  w.counter("llmserve_grammar_cache_hits_total",
            "Structured-output requests whose grammar was compiled already (or in flight).",
            static_cast<double>(s.grammar_cache_hits));
  w.counter("llmserve_grammar_compile_errors_total",
            "Grammars that did not compile (each a 400 naming its field).",
            static_cast<double>(s.grammar_compile_errors));
  w.counter("llmserve_grammar_compile_seconds_total", "Time spent compiling grammars.",
            s.grammar_compile_seconds);
  w.gauge("llmserve_grammar_cache_entries", "Compiled grammars kept for reuse.",
          static_cast<double>(s.grammar_cache_entries));
  {
    std::lock_guard lock(mu_);
    w.header("llmserve_http_requests_total", "counter", "HTTP requests by route and status code.");
    for (const auto& [k, v] : http_) {
      w.sample("llmserve_http_requests_total", {{"route", k.first}, {"code", k.second}},
               static_cast<double>(v));
    }
    w.header("llmserve_grpc_requests_total", "counter", "gRPC requests by method and status code.");
    for (const auto& [k, v] : grpc_) {
      w.sample("llmserve_grpc_requests_total", {{"method", k.first}, {"code", k.second}},
               static_cast<double>(v));
    }
    w.header("llmserve_requests_rejected_total", "counter",
             "Requests turned away before reaching the engine, by reason.");
    for (const auto& [k, v] : rejected_) {
      w.sample("llmserve_requests_rejected_total", {{"reason", k}}, static_cast<double>(v));
    }
  }
  if (m != nullptr) {
    w.histogram("llmserve_time_to_first_token_seconds", "Time to first token, seconds.",
                m->time_to_first_token.snapshot());
    w.histogram("llmserve_inter_token_latency_seconds", "Time between output tokens, seconds.",
                m->inter_token_latency.snapshot());
    w.histogram("llmserve_e2e_request_latency_seconds", "Arrival to finish, seconds.",
                m->e2e_request_latency.snapshot());
    w.histogram("llmserve_request_queue_time_seconds", "Time waiting before first scheduled.",
                m->request_queue_time.snapshot());
    w.histogram("llmserve_request_prefill_time_seconds", "Time in prefill, seconds.",
                m->request_prefill_time.snapshot());
    w.histogram("llmserve_request_decode_time_seconds", "Time in decode, seconds.",
                m->request_decode_time.snapshot());
    w.histogram("llmserve_iteration_tokens", "Tokens per engine step.",
                m->iteration_tokens.snapshot());
  }
  w.gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
          static_cast<double>(process_resident_memory_bytes()));
  w.gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
          start_time_seconds_);
  return w.text();
}

}  // namespace llmserve
