// What the HTTP and gRPC front ends need to know, independent of how it was configured
// (the serve command maps config/config.h's Config onto it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "server/common/bounded_json.h"
#include "server/common/default_sampling.h"
#include "server/common/media_options.h"

namespace llmserve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int http_port = 8000;                         // 0 = any free port
  int grpc_port = 50051;                        // 0 = any free port
  int http_threads = 64;                        // HTTP worker threads
  int max_concurrent_generations = 48;          // HTTP generation requests in flight; beyond: 429
  size_t max_body_bytes = 8u << 20;             // larger bodies: 413
  std::vector<std::string> api_keys;            // empty = auth off
  bool metrics_require_auth = true;             // only meaningful when api_keys is non-empty
  std::vector<std::string> cors_allow_origins;  // empty = CORS off; "*" = any origin
  MediaOptions media;                           // image parts: URL fetch and size limits
  int max_images_per_request = 8;               // server.max_images_per_request
  std::string tls_cert_file;                    // PEM; both set = TLS on both servers
  std::string tls_key_file;
  int max_waiting_requests = 1024;  // checked against EngineStats before parsing; 429
  int64_t max_waiting_tokens = 0;   // 0 = no limit
  int retry_after_seconds = 1;      // Retry-After on 429 / 503
  double shutdown_grace_seconds = 30.0;
  double request_timeout_seconds = 0;  // default per-request deadline; 0 = none
  double watchdog_seconds = 60.0;      // /ready false when work is pending and no step this long
  std::string served_model_name;       // "" = the engine's model_name()
  int keep_alive_timeout_seconds = 5;
  double request_head_timeout_seconds = 10.0;  // whole time to receive a request's head
  double request_body_timeout_seconds = 30.0;  // whole time to receive its body
  int max_header_count = 100;                  // beyond: 431
  int max_pending_connections = 1024;          // connections still sending a request
  // Prompt scoring per request: n x prompt tokens x (top-N + 1) logprob entries; beyond: 400.
  int64_t max_prompt_logprob_entries = 1 << 20;
  // VllmEngine.SubscribeKvEvents streams open at once; beyond: RESOURCE_EXHAUSTED.
  int max_kv_event_subscribers = 16;
  // JSON a request carries: levels of nesting and the parsed tree's bytes
  // (server.max_json_depth, server.max_json_memory); beyond: 400 / INVALID_ARGUMENT.
  JsonBounds json_bounds;
  // The model's sampling defaults for requests' omitted fields (default_sampling_from_config).
  SamplingDefaults default_sampling;

  bool tls_enabled() const { return !tls_cert_file.empty() && !tls_key_file.empty(); }
};

}  // namespace llmserve
