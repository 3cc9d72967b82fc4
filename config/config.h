// The daemon's configuration: one plain struct, filled from built-in defaults, then
// config/default.yaml-style YAML, then LLMSERVE_<SECTION>_<KEY> environment variables, then
// command-line flags (see config/config_loader.h). Every key, its range and its help text live
// in one table (config/config_keys.h); config/default.yaml documents the same defaults.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

enum class LoadFormat { kAuto, kGguf, kSafetensors, kDummy };
enum class DeviceKind { kAuto, kCpu, kCuda };
// CPU matmul activations: q8x2 = two 8-bit passes (~16 bits, matches f32), q8 = one pass, auto =
// q8 for prompt tokens, q8x2 for generated ones; by_format = q8 for K-quant files, else q8x2.
enum class CpuMatmulPrecision { kByFormat, kAuto, kQ8x2, kQ8 };
// CPU kernels' instruction set: auto = the widest the CPU has; avx2 / avx512 force one.
enum class CpuIsa { kAuto, kAvx2, kAvx512 };
// Element type of the KV cache: f16 halves its memory and the bytes attention reads per token.
enum class KvCacheDtype { kF16, kF32, kInt8, kFp8 };
// Speculative decoding proposer: none, n-gram prompt lookup, or a draft model.
enum class SpeculativeMethod { kNone, kNgram, kDraft };
enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError };
enum class LogFormat { kText, kJson };

std::string_view to_string(LoadFormat v);
std::string_view to_string(DeviceKind v);
std::string_view to_string(CpuMatmulPrecision v);
std::string_view to_string(CpuIsa v);
std::string_view to_string(KvCacheDtype v);
std::string_view to_string(SpeculativeMethod v);
std::string_view to_string(LogLevel v);
std::string_view to_string(LogFormat v);

struct ServerSection {
  std::string host = "127.0.0.1";                  // bind address for both servers
  int http_port = 8000;                            // 0 = any free port (the OS picks)
  int grpc_port = 50051;                           // 0 = any free port (the OS picks)
  int http_threads = 0;                            // 0 = max_num_seqs + 16 (resolved at load)
  std::vector<std::string> api_keys;               // empty (and no key file) = auth off
  std::string api_key_file;                        // one key per line, '#' comments; "" = none
  std::string tls_cert_file;                       // PEM; set together with tls_key_file
  std::string tls_key_file;                        // PEM
  std::vector<std::string> cors_allow_origins;     // empty = CORS off; "*" = any origin
  uint64_t max_body_bytes = 8ull << 20;            // bytes; larger bodies get 413
  std::vector<std::string> allowed_media_domains;  // image URL hosts fetched; empty = none
  uint64_t max_media_bytes = 20ull << 20;          // one image's encoded bytes
  double media_fetch_timeout_seconds = 10.0;       // one image URL, connect to last byte
  int max_images_per_request = 8;
  int max_json_depth = 320;                    // nested arrays/objects in request JSON; 400
  uint64_t max_json_memory = 64ull << 20;      // a request JSON's parsed tree, bytes; 400
  int max_waiting_requests = 1024;             // queue bound; beyond it 429
  int64_t max_waiting_tokens = 0;              // prompt tokens queued; 0 = no limit
  double shutdown_grace_seconds = 30.0;        // drain time for in-flight streams
  bool metrics_require_auth = true;            // /metrics needs a key when keys are set
  double request_timeout_seconds = 0.0;        // default per-request deadline; 0 = none
  double watchdog_seconds = 60.0;              // /ready false if no step for this long
  int stream_buffer_tokens = 4096;             // per-request output buffer, in tokens
  double request_head_timeout_seconds = 10.0;  // accept / first byte -> request head received
  double request_body_timeout_seconds = 30.0;  // head received -> body received
  int max_header_count = 100;                  // header fields per request; beyond: 431
  int max_pending_connections = 1024;          // connections still sending their request
  std::string served_model_name;               // "" = derived from model.path
  std::string reasoning_parser = "auto";       // auto | none | deepseek_r1 | qwen3
  // Prompt scoring per request: n x prompt tokens x (top-N + 1) logprob entries; beyond: 400.
  int64_t max_prompt_logprob_entries = 1 << 20;
  // /v1/messages: system-prompt lines starting with one of these are dropped (prefix caching).
  std::vector<std::string> anthropic_strip_system_lines = {"x-anthropic-billing-header:"};
};

struct ModelSection {
  std::string path = "models/SmolLM2-135M-Instruct.Q4_1.gguf";  // GGUF file or HF directory
  LoadFormat load_format = LoadFormat::kAuto;                   // auto: from the path
  std::string dummy_preset = "llama-3.1-8b";                    // shape for load_format dummy
  std::string chat_template;                                    // Jinja file; "" = model's own
  int max_model_len = 0;                                        // tokens; 0 = from the model
  // Load-time quantization of F32 / F16 / BF16 matmul weights: "" (off), q8_0, q4_0, q4_k or fp8
  // (engine/model/quantize_model.h).
  std::string quantize;
  // "key=value" sampling defaults for requests that omit them, over the model directory's
  // generation_config.json (server/common/default_sampling.h).
  std::vector<std::string> default_sampling;
};

struct EngineSection {
  DeviceKind device = DeviceKind::kAuto;  // auto = CUDA when a GPU is present, else CPU
  int threads = 0;                        // CPU compute threads; 0 = all cores
  CpuMatmulPrecision cpu_matmul_precision = CpuMatmulPrecision::kByFormat;
  CpuIsa cpu_isa = CpuIsa::kAuto;        // a start-up error when the CPU lacks the one forced
  uint64_t kv_cache_bytes = 1ull << 30;  // CPU KV-cache budget, bytes
  KvCacheDtype kv_cache_dtype = KvCacheDtype::kF16;
  double gpu_memory_utilization = 0.9;  // fraction of GPU memory the engine may use
  int block_size = 16;                  // tokens per KV page; power of two in [1, 256]
  int max_num_seqs = 256;               // running requests per step
  int max_num_batched_tokens = 2048;    // token budget per step
  bool enable_prefix_caching = true;
  bool enable_chunked_prefill = true;
  uint64_t seed = 0;                         // server seed for requests without their own
  int max_logprobs = 20;                     // largest logprobs / top_logprobs a request may ask
  uint64_t image_cache_bytes = 64ull << 20;  // vision: encoder outputs kept by content hash
  bool cuda_graphs = true;                   // capture decode steps in CUDA graphs
  int grammar_compile_threads = 2;           // structured outputs: grammar compile pool
  int grammar_cache_size = 256;              // compiled grammars kept (LRU)
  uint64_t grammar_cache_bytes = uint64_t{512} << 20;         // ... and their summed memory
  uint64_t grammar_max_bytes = uint64_t{64} << 20;            // one compiled grammar's memory
  double grammar_compile_timeout_seconds = 20;                // one compile's budget
  uint64_t grammar_compile_memory_bytes = uint64_t{2} << 30;  // one compile's memory
  int grammar_max_schema_depth = 64;                          // JSON Schema nesting
  int grammar_max_schema_nodes = 10000;                       // JSON Schema subschemas
};

struct SpeculativeSection {
  SpeculativeMethod method = SpeculativeMethod::kNone;
  int num_tokens = 4;            // drafts per request and step (k)
  int ngram_min = 1;             // shortest suffix the n-gram lookup matches
  int ngram_max = 4;             // longest suffix it tries first
  std::string draft_model;       // method draft: GGUF file or HF directory, same vocabulary
  int max_running_requests = 8;  // above this many running requests a step drafts nothing
  double draft_token_cost = -1;  // one draft's cost / a decode step's; -1 = measured
};

struct MetricsSection {
  bool vllm_names = true;  // also export vLLM's metric names (vllm:*) for routers and pickers
};

struct KvEventsSection {
  bool enabled = false;  // publish KV-cache events on ZeroMQ
  std::string host;      // PUB socket's interface when endpoint is ""; "" = server.host
  int port = 5557;       // PUB socket's TCP port when endpoint is ""; 0 = any free port
  std::string endpoint;  // explicit ZeroMQ endpoint (vLLM's bind/connect rule); "" = host:port
  std::string replay_endpoint;    // ROUTER socket for replays (bound); "" = none
  std::string topic;              // first frame of each message; "" as vLLM
  int buffer_steps = 10000;       // batches kept for replay and lagging readers
  int hwm = 100000;               // PUB high-water mark, messages
  std::string layout = "map";     // events as tagged maps (vLLM now) or arrays (before)
  int max_grpc_subscribers = 16;  // VllmEngine.SubscribeKvEvents streams open at once
};

// Tiers below the KV page pool (engine/kv_offload, docs/KV_CACHE.md).
struct KvOffloadSection {
  uint64_t host_bytes = 0;                           // host-memory tier budget, bytes; 0 = off
  uint64_t disk_bytes = 0;                           // disk tier budget, bytes; 0 = off
  std::string disk_path = "/var/cache/llmserve/kv";  // the disk tier's directory
};

struct KvTransferSection {
  std::string role = "none";           // none | producer | consumer | both
  std::string host = "127.0.0.1";      // the UCX transport listens here (producer)
  std::string advertise_host;          // remote_host in handoffs; "" = host
  int port = 5600;                     // 0 = any free port
  double lease_seconds = 30;           // pinned prefill kept this long without a release
  double pull_timeout_seconds = 10;    // a consumer's pull gives up (local prefill) after this
  double connect_timeout_seconds = 2;  // a consumer's connect + open gives up after this
  std::string secret;                  // the deployment's shared secret (>= 16 bytes)
  std::string secret_file;             // the secret's first line; "" = none
  std::vector<std::string> peers;      // "host" or "host:port" of the other daemons; [] = any
  bool accept_client_params = false;   // pull unsigned handoffs naming a peer
  int64_t max_pinned_blocks = 0;       // producer's pin budget; 0 = half the KV cache
};

struct LoggingSection {
  LogLevel level = LogLevel::kInfo;
  LogFormat format = LogFormat::kText;
};

struct Config {
  ServerSection server;
  ModelSection model;
  EngineSection engine;
  SpeculativeSection speculative;
  MetricsSection metrics;
  KvEventsSection kv_events;
  LoggingSection logging;
  KvTransferSection kv_transfer;
  KvOffloadSection kv_offload;

  // "section.key" -> where its value came from: "default", "FILE:LINE", "env NAME" or
  // "flag --name". Filled by the loader; not a configuration key.
  std::map<std::string, std::string> sources;
};

// The effective configuration, one "section.key = value  (source)" line per key, API keys
// masked. For the start-up log.
std::string describe(const Config& config);

}  // namespace llmserve
