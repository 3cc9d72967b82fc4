#include "server/common/options_from_config.h"

#include <fstream>
#include <limits>
#include <sstream>

namespace llmserve {

Result<EngineOptions> engine_options_from_config(const Config& c) {
  EngineOptions o;
  o.model_path = c.model.path;
  o.device = std::string(to_string(c.engine.device));
  o.threads = c.engine.threads;
  o.cpu_matmul_precision = std::string(to_string(c.engine.cpu_matmul_precision));
  o.cpu_isa = std::string(to_string(c.engine.cpu_isa));
  o.quantize = c.model.quantize;
  o.kv_cache_dtype = std::string(to_string(c.engine.kv_cache_dtype));
  o.kv_cache_bytes = c.engine.kv_cache_bytes;
  o.gpu_memory_utilization = c.engine.gpu_memory_utilization;
  o.cuda_graphs = c.engine.cuda_graphs;
  o.block_size = c.engine.block_size;
  o.max_num_seqs = c.engine.max_num_seqs;
  o.max_num_batched_tokens = c.engine.max_num_batched_tokens;
  o.max_model_len = c.model.max_model_len;
  o.enable_prefix_caching = c.engine.enable_prefix_caching;
  o.enable_chunked_prefill = c.engine.enable_chunked_prefill;
  o.seed = c.engine.seed;
  o.max_waiting_requests = c.server.max_waiting_requests;
  o.max_waiting_tokens = c.server.max_waiting_tokens > 0 ? c.server.max_waiting_tokens
                                                         : std::numeric_limits<int64_t>::max();
  o.stream_buffer = static_cast<size_t>(std::max(c.server.stream_buffer_tokens, 1));
  o.max_logprobs = c.engine.max_logprobs;
  o.image_cache_bytes = c.engine.image_cache_bytes;
  o.grammar_compile_threads = c.engine.grammar_compile_threads;
  o.grammar_cache_size = c.engine.grammar_cache_size;
  o.grammar_cache_bytes = static_cast<int64_t>(c.engine.grammar_cache_bytes);
  o.grammar_max_bytes =
      static_cast<int64_t>(std::min(c.engine.grammar_max_bytes, c.engine.grammar_cache_bytes));
  o.grammar_compile_timeout_seconds = c.engine.grammar_compile_timeout_seconds;
  o.grammar_compile_memory_bytes = static_cast<int64_t>(c.engine.grammar_compile_memory_bytes);
  o.grammar_max_schema_depth = c.engine.grammar_max_schema_depth;
  o.grammar_max_schema_nodes = c.engine.grammar_max_schema_nodes;
  o.kv_events_buffer_steps = c.kv_events.enabled ? c.kv_events.buffer_steps : 0;
  o.kv_offload.host_bytes = static_cast<int64_t>(c.kv_offload.host_bytes);
  o.kv_offload.disk_bytes = static_cast<int64_t>(c.kv_offload.disk_bytes);
  o.kv_offload.disk_path = c.kv_offload.disk_path;
  o.kv_transfer.role = c.kv_transfer.role;
  o.kv_transfer.host = c.kv_transfer.host;
  o.kv_transfer.advertise_host = c.kv_transfer.advertise_host;
  o.kv_transfer.port = c.kv_transfer.port;
  o.kv_transfer.lease_seconds = c.kv_transfer.lease_seconds;
  o.kv_transfer.pull_timeout_seconds = c.kv_transfer.pull_timeout_seconds;
  o.kv_transfer.connect_timeout_seconds = c.kv_transfer.connect_timeout_seconds;
  o.kv_transfer.secret = c.kv_transfer.secret;
  o.kv_transfer.peers = c.kv_transfer.peers;
  o.kv_transfer.accept_client_params = c.kv_transfer.accept_client_params;
  o.kv_transfer.max_pinned_blocks = c.kv_transfer.max_pinned_blocks;
  const SpeculativeSection& sp = c.speculative;
  o.speculative.method = sp.method == SpeculativeMethod::kNgram   ? SpecMethod::kNgram
                         : sp.method == SpeculativeMethod::kDraft ? SpecMethod::kDraft
                                                                  : SpecMethod::kNone;
  o.speculative.num_tokens = sp.num_tokens;
  o.speculative.ngram_min = sp.ngram_min;
  o.speculative.ngram_max = sp.ngram_max;
  o.speculative.draft_model = sp.draft_model;
  o.speculative.max_running_requests = sp.max_running_requests;
  o.speculative.draft_token_cost = sp.draft_token_cost;
  if (o.speculative.method != SpecMethod::kNone) {
    LLMSERVE_RETURN_IF_ERROR(o.speculative.validate());
  }
  if (!c.model.chat_template.empty()) {
    std::ifstream in(c.model.chat_template, std::ios::binary);
    if (!in) return not_found("model.chat_template: cannot read '" + c.model.chat_template + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    o.chat_template_override = ss.str();
  }
  return o;
}

ServerOptions server_options_from_config(const Config& c) {
  ServerOptions o;
  o.host = c.server.host;
  o.http_port = c.server.http_port;
  o.grpc_port = c.server.grpc_port;
  // Streams hold a pool thread each; keep a few threads for short calls (/health, /metrics).
  o.http_threads = std::max(c.server.http_threads, 8);
  o.max_concurrent_generations = std::max(o.http_threads - 8, 1);
  o.max_body_bytes = c.server.max_body_bytes;
  o.media.fetch.allowed_domains = c.server.allowed_media_domains;
  o.media.fetch.max_bytes = c.server.max_media_bytes;
  o.media.fetch.timeout_seconds = c.server.media_fetch_timeout_seconds;
  o.media.limits.max_bytes = static_cast<int64_t>(c.server.max_media_bytes);
  o.max_images_per_request = c.server.max_images_per_request;
  o.json_bounds.max_depth = c.server.max_json_depth;
  o.json_bounds.max_tree_bytes = c.server.max_json_memory;
  o.api_keys = c.server.api_keys;
  o.metrics_require_auth = c.server.metrics_require_auth;
  o.cors_allow_origins = c.server.cors_allow_origins;
  o.tls_cert_file = c.server.tls_cert_file;
  o.tls_key_file = c.server.tls_key_file;
  o.max_waiting_requests = c.server.max_waiting_requests;
  o.max_waiting_tokens = c.server.max_waiting_tokens;
  o.shutdown_grace_seconds = c.server.shutdown_grace_seconds;
  o.request_timeout_seconds = c.server.request_timeout_seconds;
  o.watchdog_seconds = c.server.watchdog_seconds;
  o.served_model_name = c.server.served_model_name;
  o.request_head_timeout_seconds = c.server.request_head_timeout_seconds;
  o.request_body_timeout_seconds = c.server.request_body_timeout_seconds;
  o.max_header_count = c.server.max_header_count;
  o.max_pending_connections = c.server.max_pending_connections;
  o.max_prompt_logprob_entries = c.server.max_prompt_logprob_entries;
  o.max_kv_event_subscribers = c.kv_events.max_grpc_subscribers;
  return o;
}

}  // namespace llmserve
