// The engine: one thread runs the step loop (schedule -> execute -> sample -> update -> stream);
// submit() and abort() are thread-safe and never block on the model (DESIGN §2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/engine_stats.h"
#include "engine/generate_request.h"
#include "engine/grammar/grammar_compiler.h"
#include "engine/kv_offload/kv_offload_options.h"
#include "engine/kv_transfer/kv_transfer_options.h"
#include "engine/request_stream.h"
#include "engine/spec/spec_config.h"

namespace llmserve {

namespace vision {
class ImageEncoder;
}
class Pooler;
class Tokenizer;
class ChatTemplate;
class KvEventBus;
struct ModelConfig;

struct EngineOptions {
  std::string model_path;       // .gguf file or HF directory
  std::string device = "auto";  // auto | cpu | cuda
  int32_t threads = 0;          // CPU threads, 0 = all cores
  std::string cpu_matmul_precision =
      "by_format";                         // by_format | auto | q8x2 | q8 (matmul_precision.h)
  std::string cpu_isa = "auto";            // auto | avx2 | avx512 (process-wide)
  std::string quantize;                    // model.quantize: "" | q8_0 | q4_0 | q4_k | fp8 (CPU)
  std::string kv_cache_dtype = "f16";      // f16 | f32 (CPU) | int8 | fp8 (CUDA)
  uint64_t kv_cache_bytes = 256ull << 20;  // CPU KV budget
  double gpu_memory_utilization = 0.9;
  bool cuda_graphs = true;  // CUDA: capture pure-decode steps
  int32_t block_size = 16;
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
  int32_t max_model_len = 0;  // 0 = the model's context length
  bool enable_prefix_caching = true;
  bool enable_chunked_prefill = true;
  // Prompt tokens scored (prompt logprobs, echo) per step at most: the logits rows kept for them.
  int32_t max_scored_tokens_per_step = 256;
  // A checkpoint with a vision tower (engine/vision): bytes of projected image features kept by
  // content hash (an image is encoded once while it stays cached).
  uint64_t image_cache_bytes = 64ull << 20;
  uint64_t seed = 0;                    // server seed for requests without one
  int32_t max_waiting_requests = 1024;  // submit() rejects beyond (RESOURCE_EXHAUSTED)
  int64_t max_waiting_tokens = 1 << 20;
  size_t stream_buffer = 4096;  // StepOutputs buffered per request before abort
  int32_t max_logprobs = 20;
  int32_t grammar_compile_threads = 2;  // structured outputs (GrammarCompiler)
  int32_t grammar_cache_size = 256;
  int64_t grammar_cache_bytes = int64_t{512} << 20;
  int64_t grammar_max_bytes = int64_t{64} << 20;
  double grammar_compile_timeout_seconds = 20;
  int64_t grammar_compile_memory_bytes = int64_t{2} << 30;
  int32_t grammar_max_schema_depth = 64;
  int32_t grammar_max_schema_nodes = 10000;
  std::string chat_template_override;  // Jinja source; empty = the model's
  SpecConfig speculative;              // speculative decoding (off by default)
  // KV-cache events (engine/kv_events): 0 = off; else the batches (one per step that changed
  // the prefix cache) kept for late or lagging readers of kv_event_bus().
  int32_t kv_events_buffer_steps = 0;
  KvTransferOptions kv_transfer;  // disaggregated prefill/decode (role none: off)
  KvOffloadOptions kv_offload;    // tiers below the page pool (disk_bytes 0: off)
};

// Points the CPU kernels (process-wide) at EngineOptions::cpu_isa; Engine::create calls it.
// INVALID_ARGUMENT when the name is unknown, FAILED_PRECONDITION when the CPU lacks the ISA.
Status apply_cpu_isa(const std::string& name);

class Engine {
 public:
  // Loads the model and tokenizer, sizes the KV cache, starts the engine thread.
  static Result<std::unique_ptr<Engine>> create(const EngineOptions& options);
  virtual ~Engine() = default;

  // Validates (prompt non-empty, ids in vocab, prompt + max_tokens within max_model_len,
  // sampling ranges) and queues. Errors: INVALID_ARGUMENT, OUT_OF_RANGE (context length, or more KV
  // than the whole cache holds), RESOURCE_EXHAUSTED (queue full), UNAVAILABLE (shutting down).
  virtual Result<std::shared_ptr<RequestStream>> submit(GenerateRequest request) = 0;
  // Takes effect at the next step: blocks freed, the stream gets a kAbort final message.
  virtual void abort(uint64_t request_id) = 0;
  virtual bool abort_external(const std::string& external_id) = 0;

  virtual const Tokenizer& tokenizer() const = 0;
  virtual const ChatTemplate* chat_template() const = 0;  // null when the model has none
  // Compiles structured-output grammars for this engine's tokenizer (thread-safe).
  virtual GrammarCompiler& grammar_compiler() = 0;
  virtual const ModelConfig& model_config() const = 0;
  // Turns a prompt's hidden states into its vector (engine/pooling): its width, prompts and
  // pooling. Null when the engine cannot pool.
  virtual const Pooler* pooler() const { return nullptr; }
  // Turns images into the features GenerateRequest::images carries (thread-safe; call before
  // submit, off the engine thread). Null when the model has no vision tower.
  virtual vision::ImageEncoder* image_encoder() const { return nullptr; }
  virtual int32_t max_model_len() const = 0;
  virtual const EngineOptions& options() const = 0;
  virtual std::string model_name() const = 0;

  virtual EngineStats stats() const = 0;
  virtual const EngineMetrics& metrics() const = 0;

  // The prefix cache's KV events (engine/kv_events/kv_event_bus.h): one batch per engine step
  // that changed it. Null when EngineOptions::kv_events_buffer_steps is 0. Lives as long as the
  // engine; shutdown() closes it (readers then see closed).
  virtual KvEventBus* kv_event_bus() { return nullptr; }
  // Disaggregated prefill/decode: this daemon's id in handoffs, and the port its transport listens
  // on; "" and 0 when kv_transfer.role is none.
  virtual std::string kv_engine_id() const { return ""; }
  virtual int32_t kv_transfer_port() const { return 0; }
  // Drops every cached prefix block no request holds, on the engine thread; blocks the caller
  // until done. Returns true when the prefix cache is empty afterwards (KV events:
  // AllBlocksCleared), false when running requests still hold cached blocks (BlockRemoved for
  // the dropped ones). UNAVAILABLE once the engine has stopped; UNIMPLEMENTED by default.
  virtual Result<bool> reset_prefix_cache() {
    return unimplemented("this engine has no prefix cache to reset");
  }

  // Stop accepting (submit -> UNAVAILABLE); running requests continue.
  virtual void stop_accepting() = 0;
  // Abort everything still running and join the engine thread.
  virtual void shutdown() = 0;
};

}  // namespace llmserve
