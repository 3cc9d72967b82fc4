#include "config/config_keys.h"

#include "config/config_key_builders.h"

namespace llmserve {
namespace {

using namespace key_builders;  // the table below is all builder calls

std::vector<ConfigKey> build_table() {
  using C = Config;
  using SS = ServerSection;
  using MS = ModelSection;
  using ES = EngineSection;
  using LS = LoggingSection;
  using MeS = MetricsSection;
  using KS = KvEventsSection;
  using TS = KvTransferSection;
  using OS = KvOffloadSection;
  constexpr uint64_t KiB = 1024, MiB = KiB << 10, GiB = MiB << 10, TiB = GiB << 10;
  std::vector<ConfigKey> t;
  // server
  t.push_back(string_key("server", "host", &C::server, &SS::host, true,
                         "Address both servers bind to (0.0.0.0 = every interface).", {"host"}));
  t.push_back(int_key("server", "http_port", &C::server, &SS::http_port, 0, 65535,
                      "HTTP (OpenAI API, /metrics) TCP port; 0 = a free port chosen by the OS.",
                      {"http-port"}));
  t.push_back(int_key("server", "grpc_port", &C::server, &SS::grpc_port, 0, 65535,
                      "gRPC TCP port; 0 = a free port chosen by the OS.", {"grpc-port"}));
  t.push_back(int_key("server", "http_threads", &C::server, &SS::http_threads, 0, 65536,
                      "HTTP worker threads; each open stream holds one. 0 = max_num_seqs + 16."));
  t.push_back(list_key("server", "api_keys", &C::server, &SS::api_keys,
                       "Accepted API keys (Authorization: Bearer KEY). Empty, with no key file, "
                       "= no authentication.",
                       {"api-key"}, /*secret=*/true));
  t.push_back(string_key("server", "api_key_file", &C::server, &SS::api_key_file, false,
                         "File with more API keys, one per line ('#' starts a comment); "
                         "\"\" = none."));
  t.push_back(string_key("server", "tls_cert_file", &C::server, &SS::tls_cert_file, false,
                         "TLS certificate chain (PEM) for HTTP and gRPC; \"\" = plain TCP."));
  t.push_back(string_key("server", "tls_key_file", &C::server, &SS::tls_key_file, false,
                         "TLS private key (PEM); set together with tls_cert_file."));
  t.push_back(list_key("server", "cors_allow_origins", &C::server, &SS::cors_allow_origins,
                       "Origins allowed by CORS (\"*\" = any). Empty = CORS off."));
  t.push_back(list_key("server", "anthropic_strip_system_lines", &C::server,
                       &SS::anthropic_strip_system_lines,
                       "/v1/messages: system-prompt lines that start with one of these are "
                       "dropped before the template renders. Claude Code's first system line "
                       "(x-anthropic-billing-header: ...) differs from conversation to "
                       "conversation and, rendered first, would keep them from sharing the "
                       "cached system prompt and tools; [] keeps every line."));
  t.push_back(size_key("server", "max_body_bytes", &C::server, &SS::max_body_bytes, KiB, GiB,
                       "Largest request body, bytes (units allowed); larger bodies get 413."));
  t.push_back(list_key("server", "allowed_media_domains", &C::server, &SS::allowed_media_domains,
                       "Hosts whose http(s) image URLs are fetched (chat image_url parts, "
                       "Responses input_image); \"*.example.com\" also allows its subdomains. "
                       "Empty = none: images must come as base64 data: URLs, and a URL gets a "
                       "400 naming the part. Redirects are not followed."));
  t.push_back(size_key("server", "max_media_bytes", &C::server, &SS::max_media_bytes, KiB, GiB,
                       "Largest image, encoded bytes (a data: URL's decoded bytes or a fetched "
                       "body); larger gets a 400 naming the part."));
  t.push_back(double_key("server", "media_fetch_timeout_seconds", &C::server,
                         &SS::media_fetch_timeout_seconds, 0, 600, true,
                         "Time one image URL may take, connect to last byte; past it a 400 "
                         "naming the part."));
  t.push_back(int_key("server", "max_images_per_request", &C::server, &SS::max_images_per_request,
                      0, 1024,
                      "Images one request may carry (a model with a vision tower); more gets a "
                      "400."));
  t.push_back(int_key("server", "max_json_depth", &C::server, &SS::max_json_depth, 16, 10000,
                      "Deepest nesting of arrays and objects in a request's JSON (HTTP bodies, "
                      "JSON in gRPC fields); deeper gets 400 (gRPC INVALID_ARGUMENT) before "
                      "anything is built. Keep it above the JSON depth of the schemas "
                      "engine.grammar_max_schema_depth allows (about 4 levels per subschema)."));
  t.push_back(size_key("server", "max_json_memory", &C::server, &SS::max_json_memory, MiB, 64 * GiB,
                       "Memory one request's parsed JSON may take, bytes (units allowed), as "
                       "estimated by a pass that builds nothing; more gets 400 (gRPC "
                       "INVALID_ARGUMENT). A parsed tree takes 1x (text) to 30x (empty arrays) "
                       "its text."));
  t.push_back(int_key("server", "max_waiting_requests", &C::server, &SS::max_waiting_requests, 1,
                      1000000, "Requests allowed to wait for a slot; beyond it 429."));
  t.push_back(int_key("server", "max_waiting_tokens", &C::server, &SS::max_waiting_tokens, 0,
                      kInt64Max, "Prompt tokens allowed to wait; beyond it 429. 0 = no limit."));
  t.push_back(double_key("server", "shutdown_grace_seconds", &C::server,
                         &SS::shutdown_grace_seconds, 0, 86400, false,
                         "Seconds in-flight streams may run after SIGTERM/SIGINT before exit."));
  t.push_back(bool_key("server", "metrics_require_auth", &C::server, &SS::metrics_require_auth,
                       "When API keys are set, /metrics needs one too (false = open)."));
  t.push_back(double_key("server", "request_timeout_seconds", &C::server,
                         &SS::request_timeout_seconds, 0, 86400 * 7, false,
                         "Default deadline of a request, seconds (queue + generation); "
                         "0 = none. A request's own timeout wins."));
  t.push_back(double_key("server", "watchdog_seconds", &C::server, &SS::watchdog_seconds, 0, 86400,
                         true,
                         "/ready turns false when work is pending and no engine step finished "
                         "for this many seconds."));
  t.push_back(int_key("server", "stream_buffer_tokens", &C::server, &SS::stream_buffer_tokens, 1,
                      1 << 20,
                      "Per-request output buffer, tokens; a client reading slower than this "
                      "is cancelled."));
  t.push_back(double_key("server", "request_head_timeout_seconds", &C::server,
                         &SS::request_head_timeout_seconds, 0, 3600, true,
                         "Whole time a connection may take to send a request's head (from "
                         "accept or its first byte); beyond it 408."));
  t.push_back(double_key("server", "request_body_timeout_seconds", &C::server,
                         &SS::request_body_timeout_seconds, 0, 3600, true,
                         "Whole time a client may take to send a request's body after its "
                         "head; beyond it 408."));
  t.push_back(int_key("server", "max_header_count", &C::server, &SS::max_header_count, 1, 10000,
                      "Header fields allowed in one request; beyond them 431."));
  t.push_back(int_key("server", "max_pending_connections", &C::server, &SS::max_pending_connections,
                      1, 1000000,
                      "Connections allowed to be sending a request at once (they hold no "
                      "worker); beyond it the one waiting longest is dropped."));
  t.push_back(int_key("server", "max_prompt_logprob_entries", &C::server,
                      &SS::max_prompt_logprob_entries, 1, kInt64Max,
                      "Largest prompt scoring a request may ask: n x prompt tokens x (top-N + 1) "
                      "logprob entries (prompt_logprobs, or echo with logprobs); beyond it 400. "
                      "The default (about 1M) is a response of about 70 MB.",
                      {"max-prompt-logprob-entries"}));
  t.push_back(string_key("server", "served_model_name", &C::server, &SS::served_model_name, false,
                         "Model id in the API (/v1/models, \"model\" fields); \"\" = the model "
                         "file or directory name."));
  t.push_back(choice_key("server", "reasoning_parser", &C::server, &SS::reasoning_parser,
                         {"auto", "none", "deepseek_r1", "qwen3"},
                         "How chat replies' <think>...</think> reasoning is returned (as "
                         "message.reasoning_content and .reasoning): qwen3 = when the reply or "
                         "the prompt's end opens the block, deepseek_r1 = the reply is reasoning "
                         "up to </think>, none = all content, auto = qwen3 for a template that "
                         "writes think tags, else none (docs/REASONING.md).",
                         {"reasoning-parser"}));
  // model
  t.push_back(string_key("model", "path", &C::model, &MS::path, false,
                         "GGUF file or Hugging Face model directory (config.json + "
                         "*.safetensors + tokenizer.json).",
                         {"model"}));
  t.push_back(
      enum_key("model", "load_format", &C::model, &MS::load_format,
               {LoadFormat::kAuto, LoadFormat::kGguf, LoadFormat::kSafetensors, LoadFormat::kDummy},
               "auto = from the path; dummy = random weights shaped by dummy_preset "
               "(benchmarks).",
               {"load-format"}));
  t.push_back(string_key("model", "dummy_preset", &C::model, &MS::dummy_preset, false,
                         "Shape of the dummy model (e.g. llama-3.1-8b, llama-3.2-1b).",
                         {"dummy-preset"}));
  t.push_back(string_key("model", "chat_template", &C::model, &MS::chat_template, false,
                         "Jinja chat template file overriding the model's; \"\" = the model's.",
                         {"chat-template"}));
  t.push_back(int_key("model", "max_model_len", &C::model, &MS::max_model_len, 0, 1 << 24,
                      "Context length limit, tokens (prompt + output); 0 = the model's.",
                      {"max-model-len"}));
  t.push_back(choice_key(
      "model", "quantize", &C::model, &MS::quantize, {"", "q8_0", "q4_0", "q4_k", "fp8"},
      "Quantize the model's F32 / F16 / BF16 matmul weights at start-up (CPU backend only): "
      "\"\" = off (weights as stored), q8_0, q4_0, q4_k or fp8 (e4m3 with 128 x 128 block "
      "scales, as the published FP8 checkpoints). Faster on a BF16 / F16 model, at a "
      "perplexity cost (bench/RESULTS.md); embeddings and already quantized tensors stay as they "
      "are, with q4_0 / q4_k an untied output.weight is q8_0, with fp8 it stays as stored. "
      "Start-up cost on 2 cores: about 5 s per GiB of F16 weights (q8_0, q4_0, fp8), 1.5 min per "
      "GiB (q4_k).",
      {"quantize"}));
  t.push_back(list_key("model", "default_sampling", &C::model, &MS::default_sampling,
                       "Sampling defaults for requests that omit them, key=value items "
                       "(temperature, top_p, top_k, min_p, repetition_penalty), over those of "
                       "the model directory's generation_config.json. Empty = the model's own "
                       "(temperature 1 when it has none).",
                       {"default-sampling"}));
  // engine
  t.push_back(enum_key("engine", "device", &C::engine, &ES::device,
                       {DeviceKind::kAuto, DeviceKind::kCpu, DeviceKind::kCuda},
                       "Backend: auto = CUDA when a GPU is present, else CPU.", {"device"}));
  t.push_back(int_key("engine", "threads", &C::engine, &ES::threads, 0, 4096,
                      "CPU compute threads; 0 = all cores.", {"threads"}));
  t.push_back(
      enum_key("engine", "cpu_matmul_precision", &C::engine, &ES::cpu_matmul_precision,
               {CpuMatmulPrecision::kByFormat, CpuMatmulPrecision::kAuto, CpuMatmulPrecision::kQ8x2,
                CpuMatmulPrecision::kQ8},
               "Activations of CPU integer matmuls: q8x2 = two 8-bit passes (~16 bits, "
               "matches an f32 reference), q8 = one pass (llama.cpp's precision, faster "
               "prefill, flips near-tie tokens), auto = q8 for prompt tokens and q8x2 for "
               "generated tokens (prefill at q8's speed, decode exact), by_format = q8 when "
               "K-quants hold most of the quantized weight bytes (llama.cpp's precision, where "
               "a second pass would cost a third of the prefill speed), else q8x2.",
               {"cpu-matmul-precision"}));
  t.push_back(enum_key("engine", "cpu_isa", &C::engine, &ES::cpu_isa,
                       {CpuIsa::kAuto, CpuIsa::kAvx2, CpuIsa::kAvx512},
                       "Instruction set of the CPU kernels: auto = the widest the CPU has, avx2 "
                       "or avx512 force one (a start-up error when the CPU lacks it). Outputs "
                       "agree (greedy tokens; logits differ by float rounding in attention).",
                       {"cpu-isa"}));
  t.push_back(size_key("engine", "kv_cache_bytes", &C::engine, &ES::kv_cache_bytes, MiB, 64 * TiB,
                       "KV-cache memory on the CPU backend, bytes (units allowed).",
                       {"kv-cache-bytes"}));
  t.push_back(
      enum_key("engine", "kv_cache_dtype", &C::engine, &ES::kv_cache_dtype,
               {KvCacheDtype::kF16, KvCacheDtype::kF32, KvCacheDtype::kInt8, KvCacheDtype::kFp8},
               "Element type of the KV cache: f16 (bf16 on CUDA), f32 (CPU only), int8 "
               "(CPU and CUDA: about half the bytes of f16, one f16 scale per token and "
               "KV head) or fp8 (e4m3 with the same scales, CUDA only).",
               {"kv-cache-dtype"}));
  t.push_back(double_key("engine", "gpu_memory_utilization", &C::engine,
                         &ES::gpu_memory_utilization, 0, 1, true,
                         "Fraction of GPU memory the engine may use (weights + activations + "
                         "KV cache).",
                         {"gpu-memory-utilization"}));
  t.push_back(int_key("engine", "block_size", &C::engine, &ES::block_size, 1, 256,
                      "Tokens per KV-cache page.", {"block-size"}, /*power_of_two=*/true));
  t.push_back(int_key("engine", "max_num_seqs", &C::engine, &ES::max_num_seqs, 1, 65536,
                      "Most requests running in one step.", {"max-num-seqs"}));
  t.push_back(int_key("engine", "max_num_batched_tokens", &C::engine, &ES::max_num_batched_tokens,
                      1, 1 << 22,
                      "Token budget of one step (prefill + decode tokens); >= max_num_seqs.",
                      {"max-num-batched-tokens"}));
  t.push_back(bool_key("engine", "enable_prefix_caching", &C::engine, &ES::enable_prefix_caching,
                       "Reuse KV pages of identical prompt prefixes across requests.",
                       {"enable-prefix-caching"}));
  t.push_back(bool_key("engine", "enable_chunked_prefill", &C::engine, &ES::enable_chunked_prefill,
                       "Split long prompts over steps; when false, max_num_batched_tokens must "
                       "hold a whole prompt.",
                       {"enable-chunked-prefill"}));
  t.push_back(int_key("engine", "seed", &C::engine, &ES::seed, 0, kInt64Max,
                      "Seed of requests that bring none (each request still gets its own "
                      "stream).",
                      {"seed"}));
  t.push_back(int_key("engine", "max_logprobs", &C::engine, &ES::max_logprobs, 0, 1024,
                      "Largest logprobs / top_logprobs a request may ask for.", {"max-logprobs"}));
  t.push_back(size_key("engine", "image_cache_bytes", &C::engine, &ES::image_cache_bytes, 0,
                       uint64_t{1} << 40,
                       "A model with a vision tower: memory of encoded images kept by content "
                       "hash, so an image sent again is not encoded again (least recently used "
                       "go first; 0 = none kept).",
                       {"image-cache-bytes"}));
  t.push_back(bool_key("engine", "cuda_graphs", &C::engine, &ES::cuda_graphs,
                       "Capture decode steps in CUDA graphs (false = always eager).",
                       {"cuda-graphs"}));
  t.push_back(int_key("engine", "grammar_compile_threads", &C::engine, &ES::grammar_compile_threads,
                      1, 64,
                      "Threads compiling structured-output grammars (JSON schema, regex, "
                      "EBNF), apart from the engine thread.",
                      {"grammar-compile-threads"}));
  t.push_back(int_key("engine", "grammar_cache_size", &C::engine, &ES::grammar_cache_size, 1,
                      1 << 20, "Compiled grammars kept for reuse (least recently used go first).",
                      {"grammar-cache-size"}));
  t.push_back(size_key("engine", "grammar_cache_bytes", &C::engine, &ES::grammar_cache_bytes,
                       1 << 20, uint64_t{1} << 40,
                       "Memory the cached compiled grammars may use together (least recently "
                       "used go first).",
                       {"grammar-cache-bytes"}));
  t.push_back(size_key("engine", "grammar_max_bytes", &C::engine, &ES::grammar_max_bytes, 1 << 16,
                       uint64_t{1} << 40,
                       "Memory one compiled grammar may use; a larger one is refused with a 400 "
                       "(at most grammar_cache_bytes).",
                       {"grammar-max-bytes"}));
  t.push_back(double_key("engine", "grammar_compile_timeout_seconds", &C::engine,
                         &ES::grammar_compile_timeout_seconds, 0, 3600, true,
                         "Time one grammar may take to compile; past it the compile is killed "
                         "and the request gets a 400.",
                         {"grammar-compile-timeout"}));
  t.push_back(size_key("engine", "grammar_compile_memory_bytes", &C::engine,
                       &ES::grammar_compile_memory_bytes, 16 << 20, uint64_t{1} << 40,
                       "Memory one grammar compile may allocate (it runs in a child process); "
                       "past it the request gets a 400.",
                       {"grammar-compile-memory-bytes"}));
  t.push_back(int_key("engine", "grammar_max_schema_depth", &C::engine,
                      &ES::grammar_max_schema_depth, 1, 100000,
                      "Deepest nesting of subschemas a JSON Schema may have (compile time "
                      "grows with its cube); deeper ones get a 400.",
                      {"grammar-max-schema-depth"}));
  t.push_back(int_key("engine", "grammar_max_schema_nodes", &C::engine,
                      &ES::grammar_max_schema_nodes, 1, 10000000,
                      "Most subschemas a JSON Schema may hold; larger ones get a 400.",
                      {"grammar-max-schema-nodes"}));
  // speculative
  using PS = SpeculativeSection;
  t.push_back(
      enum_key("speculative", "method", &C::speculative, &PS::method,
               {SpeculativeMethod::kNone, SpeculativeMethod::kNgram, SpeculativeMethod::kDraft},
               "Speculative decoding: none, ngram (drafts copied from earlier in the "
               "prompt and output) or draft (a small model with the same vocabulary). "
               "The output is the same token for token as without it.",
               {"speculative-method"}));
  t.push_back(int_key("speculative", "num_tokens", &C::speculative, &PS::num_tokens, 1, 32,
                      "Drafts proposed per request and step, all checked in one forward pass.",
                      {"num-speculative-tokens"}));
  t.push_back(int_key("speculative", "ngram_min", &C::speculative, &PS::ngram_min, 1, 64,
                      "Shortest suffix the n-gram lookup matches (<= ngram_max)."));
  t.push_back(int_key("speculative", "ngram_max", &C::speculative, &PS::ngram_max, 1, 64,
                      "Longest suffix the n-gram lookup tries first."));
  t.push_back(string_key("speculative", "draft_model", &C::speculative, &PS::draft_model, false,
                         "Draft model for method draft: a .gguf file or HF directory with the "
                         "target's vocabulary."));
  t.push_back(int_key("speculative", "max_running_requests", &C::speculative,
                      &PS::max_running_requests, 0, 65536,
                      "Above this many running requests a step drafts nothing (large batches "
                      "are compute-bound; speculation would slow them)."));
  t.push_back(double_key(
      "speculative", "draft_token_cost", &C::speculative, &PS::draft_token_cost, -1, 100, false,
      "Cost of verifying (and for a draft model, making) one draft relative "
      "to a decode step. Each request drafts only as many tokens as pay for "
      "themselves at its recent acceptance rate; 0 = always num_tokens; -1 = "
      "measured at start-up (a decode step and a check of each draft count, timed)."));
  // metrics
  t.push_back(bool_key("metrics", "vllm_names", &C::metrics, &MeS::vllm_names,
                       "Also export vLLM's names on /metrics (vllm:num_requests_running, "
                       "vllm:kv_cache_usage_perc, vllm:cache_config_info, ...) with the same "
                       "values, for routers and endpoint pickers that judge workers by them."));
  // kv_events
  t.push_back(bool_key("kv_events", "enabled", &C::kv_events, &KS::enabled,
                       "Publish KV-cache events (blocks stored in / removed from the prefix "
                       "cache) on ZeroMQ in vLLM's format, for KV-aware routers."));
  t.push_back(string_key("kv_events", "host", &C::kv_events, &KS::host, false,
                         "Interface the events' PUB socket binds when endpoint is \"\"; \"\" = "
                         "server.host. Anyone who reaches it reads the token ids of every cached "
                         "prompt: keep it private to the routers (docs/SECURITY.md)."));
  t.push_back(int_key("kv_events", "port", &C::kv_events, &KS::port, 0, 65535,
                      "TCP port of the events' PUB socket when endpoint is \"\"; 0 = a free "
                      "port chosen by the OS (logged)."));
  t.push_back(string_key("kv_events", "endpoint", &C::kv_events, &KS::endpoint, false,
                         "Explicit ZeroMQ endpoint instead of host and port, with vLLM's rule: "
                         "bound when it holds * or :: (or is ipc:// or inproc://), else "
                         "connected to a subscriber that binds. \"\" = bind tcp://host:port. "
                         "tcp://*:N binds every interface (a warning at start-up)."));
  t.push_back(string_key("kv_events", "replay_endpoint", &C::kv_events, &KS::replay_endpoint, false,
                         "ZeroMQ ROUTER endpoint (bound) answering replay requests with the "
                         "buffered batches; \"\" = none. Name an interface (tcp://10.0.0.5:5558): "
                         "tcp://*:N binds every interface (a warning at start-up)."));
  t.push_back(
      string_key("kv_events", "topic", &C::kv_events, &KS::topic, false,
                 "Topic frame of every message; \"\" = none, as vLLM sends by default (and "
                 "vllm-router expects). llm-d's subscribers read kv@<pod ip:port>@<model>."));
  t.push_back(int_key("kv_events", "buffer_steps", &C::kv_events, &KS::buffer_steps, 1, 10000000,
                      "Event batches (one per engine step that changed the cache) kept for "
                      "replay and for readers that fall behind; older ones are dropped and "
                      "counted."));
  t.push_back(int_key("kv_events", "hwm", &C::kv_events, &KS::hwm, 1, 100000000,
                      "ZeroMQ high-water mark of the PUB socket, messages; past it a slow "
                      "subscriber misses messages (it sees the sequence gap)."));
  t.push_back(choice_key("kv_events", "layout", &C::kv_events, &KS::layout, {"map", "array"},
                         "Layout of each event in a batch: map = vLLM's current one (tagged maps "
                         "{\"type\": \"BlockStored\", ...}, read by vllm-router and smg), array = "
                         "vLLM's earlier array_like one ([\"BlockStored\", ...])."));
  t.push_back(int_key("kv_events", "max_grpc_subscribers", &C::kv_events, &KS::max_grpc_subscribers,
                      1, 4096,
                      "VllmEngine.SubscribeKvEvents streams (smg's gateways) open at once; "
                      "beyond it a new one gets RESOURCE_EXHAUSTED."));
  // kv_offload
  t.push_back(size_key("kv_offload", "host_bytes", &C::kv_offload, &OS::host_bytes, 0, 64 * TiB,
                       "Budget of the host-memory tier below the KV page pool, bytes (units "
                       "allowed); 0 = off. Allocated at start-up (pinned memory on CUDA, RAM on "
                       "the CPU backend). Cached prefix blocks are copied there in the "
                       "background, restored ahead of the prefill that needs them, and evicted "
                       "least-recently-used to the disk tier when that is on (docs/KV_CACHE.md)."));
  t.push_back(size_key("kv_offload", "disk_bytes", &C::kv_offload, &OS::disk_bytes, 0, 1024 * TiB,
                       "Budget of the disk tier below the KV page pool, bytes (units allowed); "
                       "0 = off. Full prefix blocks are written there in the background as they "
                       "are cached (below the host tier when that is on: its evicted pages, and at "
                       "shutdown all of them), restored ahead of the prefill that needs them "
                       "after the pool evicted them or the daemon restarted, and evicted "
                       "least-recently-used (docs/KV_CACHE.md)."));
  t.push_back(string_key("kv_offload", "disk_path", &C::kv_offload, &OS::disk_path, false,
                         "Directory of the disk tier's page files (created when missing). Give "
                         "each daemon its own: pages hold prompts' token ids."));
  // logging
  t.push_back(enum_key(
      "logging", "level", &C::logging, &LS::level,
      {LogLevel::kTrace, LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError},
      "Least severe level logged.", {"log-level"}));
  t.push_back(
      enum_key("logging", "format", &C::logging, &LS::format, {LogFormat::kText, LogFormat::kJson},
               "text = human-readable lines; json = one JSON object per line.", {"log-format"}));
  // kv_transfer
  t.push_back(choice_key("kv_transfer", "role", &C::kv_transfer, &TS::role,
                         {"none", "producer", "consumer", "both"},
                         "Disaggregated prefill/decode (docs/DISAGGREGATION.md): producer = keeps "
                         "its prefills' KV pinned for a consumer and answers kv_transfer_params; "
                         "consumer = pulls the KV of a request flagged do_remote_prefill over UCX;"
                         " both = either, keeping only prefills flagged do_remote_decode; none = "
                         "off."));
  t.push_back(string_key("kv_transfer", "host", &C::kv_transfer, &TS::host, true,
                         "Address the UCX transport listens on (producer)."));
  t.push_back(string_key("kv_transfer", "advertise_host", &C::kv_transfer, &TS::advertise_host,
                         false,
                         "Address consumers reach this producer at (remote_host in "
                         "kv_transfer_params); \"\" = host."));
  t.push_back(int_key("kv_transfer", "port", &C::kv_transfer, &TS::port, 0, 65535,
                      "Port of the UCX transport; 0 = any free port."));
  t.push_back(double_key("kv_transfer", "lease_seconds", &C::kv_transfer, &TS::lease_seconds, 0,
                         86400, true,
                         "A producer keeps a prefill's KV blocks pinned until the consumer "
                         "releases them, or this long."));
  t.push_back(double_key("kv_transfer", "pull_timeout_seconds", &C::kv_transfer,
                         &TS::pull_timeout_seconds, 0, 3600, true,
                         "A consumer's reads of a pulled prefill that take longer are abandoned: "
                         "the request is prefilled locally."));
  t.push_back(double_key("kv_transfer", "connect_timeout_seconds", &C::kv_transfer,
                         &TS::connect_timeout_seconds, 0, 600, true,
                         "A consumer waits this long for the producer to connect and answer "
                         "for its lease (holding no KV block or sequence slot meanwhile), then "
                         "prefills locally."));
  {
    ConfigKey secret = string_key(
        "kv_transfer", "secret", &C::kv_transfer, &TS::secret, false,
        "Shared secret of one deployment's daemons (at least 16 bytes), required with a role: "
        "producer and consumer prove they hold it (HMAC-SHA256 over nonces of both sides) before "
        "any KV moves, and producers sign their handoffs with it. Prefer secret_file.");
    secret.secret = true;
    t.push_back(std::move(secret));
  }
  t.push_back(string_key("kv_transfer", "secret_file", &C::kv_transfer, &TS::secret_file, false,
                         "File whose first line is kv_transfer.secret (e.g. a mounted "
                         "Kubernetes Secret); \"\" = none."));
  t.push_back(list_key("kv_transfer", "peers", &C::kv_transfer, &TS::peers,
                       "The deployment's other daemons, \"host\" or \"host:port\": a producer "
                       "accepts transfer connections only from these hosts, a consumer pulls only "
                       "from these. Empty = any daemon that holds the secret."));
  t.push_back(bool_key("kv_transfer", "accept_client_params", &C::kv_transfer,
                       &TS::accept_client_params,
                       "Consumer: also pull a handoff that carries no producer signature (a "
                       "client's own kv_transfer_params) when it names a host in "
                       "kv_transfer.peers. Off: only handoffs signed by a producer holding the "
                       "secret are pulled; others prefill locally."));
  t.push_back(int_key("kv_transfer", "max_pinned_blocks", &C::kv_transfer, &TS::max_pinned_blocks,
                      int64_t{0}, int64_t{1} << 40,
                      "Producer: KV blocks kept pinned for consumers at most, over all leases; "
                      "past it a prefill answers no handoff and its consumer prefills locally. "
                      "0 = half of the KV cache."));
  return t;
}

}  // namespace

std::string_view to_string(KeyType t) {
  switch (t) {
    case KeyType::kBool:
      return "a boolean";
    case KeyType::kInt:
      return "an integer";
    case KeyType::kDouble:
      return "a number";
    case KeyType::kSize:
      return "a size";
    case KeyType::kString:
      return "a string";
    case KeyType::kStringList:
      return "a list";
    case KeyType::kEnum:
      return "a name";
  }
  return "a value";
}

std::string ConfigKey::full_name() const {
  return std::string(section) + "." + std::string(name);
}

std::string ConfigKey::env_name() const {
  std::string out = "LLMSERVE_" + std::string(section) + "_" + std::string(name);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

std::string ConfigKey::flag_name() const {
  std::string out = "--" + full_name();
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

std::string ConfigKey::rule_text() const {
  if (type == KeyType::kEnum) return "One of " + range + ".";
  if (type == KeyType::kBool) return "true or false.";
  if (range == "non-empty") return "Must not be empty.";
  return range.empty() ? "" : "Range " + range + ".";
}

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> kTable = build_table();
  return kTable;
}

const std::vector<std::string_view>& config_sections() {
  static const std::vector<std::string_view> kSections = {"server",      "model",      "engine",
                                                          "speculative", "metrics",    "kv_events",
                                                          "kv_transfer", "kv_offload", "logging"};
  return kSections;
}

const ConfigKey* find_config_key(std::string_view section, std::string_view name) {
  for (const ConfigKey& k : config_keys()) {
    if (k.section == section && k.name == name) return &k;
  }
  return nullptr;
}

}  // namespace llmserve
