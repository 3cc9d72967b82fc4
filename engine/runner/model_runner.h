// Owns the model, the backend (CpuOps, or CudaOps when use_cuda) with its KV cache, and the Llama
// graph; runs one ForwardBatch per step and returns the sampled rows' logits (DESIGN §5).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/forward_batch.h"
#include "engine/model/llama_graph.h"
#include "engine/model/model_graph.h"
#include "engine/model/model_weights.h"
#include "engine/runner/cpu_ops.h"
#include "engine/runner/draft_chains.h"
#include "engine/runner/matmul_precision.h"
#include "engine/runner/on_device_sampler.h"
#include "engine/runner/sampler.h"

namespace llmserve {

struct ModelRunnerOptions {
  std::string model_path;  // .gguf file or HF directory
  int num_threads = 2;     // CPU threads, the caller included
  // CPU integer matmuls, per row kind; nullopt: by the weights after model.quantize
  // (matmul_precision_for_weights, engine.cpu_matmul_precision by_format).
  std::optional<MatmulPrecision> matmul_precision = MatmulPrecision{};
  uint64_t kv_cache_bytes = 256ull << 20;  // K + V over all layers; sets num_blocks
  kernels::KvDtype kv_cache_dtype = kernels::KvDtype::kF16;  // f16 is bf16 on CUDA; fp8: CUDA
  int block_size = 16;                                       // tokens per KV block
  int64_t max_tokens_per_step = 2048;                        // new tokens in one ForwardBatch
  int64_t max_samples_per_step = 256;                        // sampled rows in one ForwardBatch
  // Logits rows of scored prompt tokens (prompt logprobs) on top of the sampled ones: the graph
  // has room for both; the device sampler, which never sees scored rows, for sampled ones only.
  int64_t max_scored_rows_per_step = 0;
  int32_t max_logprobs = 20;  // top logprobs one row may ask for (engine.max_logprobs)
  // CUDA backend: KV cache sized by a profiling forward at max_tokens_per_step, as
  // (total x gpu_memory_utilization - peak use) / block bytes; kv_cache_bytes is then unused.
  bool use_cuda = false;
  double gpu_memory_utilization = 0.9;
  int max_num_seqs = 256;        // requests per step (CUDA-graph buckets)
  int64_t max_model_len = 4096;  // tokens per sequence (CUDA block-table width)
  bool cuda_graphs = true;       // capture pure-decode steps (every bucket, at start-up)
  std::vector<int32_t> eos_ids;  // CUDA: the stop ids min_tokens masks (generation_eos_ids)
  // model.quantize: "" (off), q8_0, q4_0 or q4_k; CPU only (engine/model/quantize_model.h).
  std::string quantize;
};

// True when this binary has the CUDA backend and the driver reports a device.
bool cuda_backend_available();

class ModelRunner {
 public:
  // Loads the model (zero-copy memory map), sizes the KV cache as
  // num_blocks = kv_cache_bytes / (block_size x kv_bytes_per_token(kv_cache_dtype)), and prepares
  // the graph. Errors: kv_cache_dtype f32 with use_cuda (the CUDA kernels read bf16 pages).
  static Result<std::unique_ptr<ModelRunner>> create(const ModelRunnerOptions& options);
  // The same over an already loaded model (options.model_path ignored).
  static Result<std::unique_ptr<ModelRunner>> create(std::unique_ptr<LoadedModel> model,
                                                     const ModelRunnerOptions& options);

  // Logits [S, vocab_size] for batch.sample_rows, valid until the next execute().
  Result<std::span<const float>> execute(const ForwardBatch& batch);
  // Runs the step and samples row s of its logits with rows[s] (params and state; rows[s].logits
  // is ignored) as `sampler` would: on the device that holds the logits (the CUDA backend
  // samples on the GPU and copies back only ids and logprobs) or with `sampler` on the CPU.
  // Appends each chosen token to its state. rows.size() must equal batch.num_samples(). Rows
  // chained by drafts (SampleRow::draft) are verified: after a rejected draft the chain's later
  // rows are not sampled and come back with token_id -1.
  Result<std::vector<SampleResult>> execute_and_sample(const ForwardBatch& batch,
                                                       std::span<const SampleRow> rows,
                                                       Sampler& sampler);
  // The last execute's ForwardBatch::pool_rows: [P, hidden] last-layer hidden states before
  // the final norm (an encoder's: after its last LayerNorm), valid until the next execute.
  std::span<const float> pooled_hidden() const { return graph_->pooled_hidden(); }
  // Decode-graph buckets captured at start-up (CUDA with cuda_graphs; 0 otherwise).
  size_t num_decode_graphs() const;

  const ModelConfig& config() const { return model_->config(); }
  const LoadedModel& model() const { return *model_; }
  int block_size() const { return options_.block_size; }
  int64_t num_blocks() const { return ops_->kv_cache_spec().num_blocks; }
  int64_t max_tokens_per_step() const { return options_.max_tokens_per_step; }
  int64_t max_samples_per_step() const { return options_.max_samples_per_step; }
  uint64_t kv_cache_bytes() const { return ops_->kv_cache_bytes(); }
  // The cache in host memory (the CPU backend); nullopt on CUDA.
  std::optional<KvHostMemory> kv_host_memory() const { return ops_->kv_host_memory(); }
  std::optional<KvDeviceMemory> kv_device_memory() const { return ops_->kv_device_memory(); }
  const char* backend() const { return options_.use_cuda ? "cuda" : "cpu"; }
  // The cache's element type (kF16 is bf16 on CUDA: the same bytes).
  kernels::KvDtype kv_dtype() const { return options_.kv_cache_dtype; }
  // The CPU matmuls' precision in effect (by_format resolved); q8x2 on CUDA, where it is unused.
  MatmulPrecision matmul_precision() const {
    return options_.matmul_precision.value_or(MatmulPrecision{});
  }
  // The CPU backend's weight preparation at start-up (repacking, released source pages); empty
  // on CUDA.
  const CpuWeightStats& weight_stats() const { return weight_stats_; }

  ~ModelRunner();

 private:
  ModelRunner();

  ModelRunnerOptions options_;
  std::unique_ptr<LoadedModel> model_;
  std::unique_ptr<Ops> ops_;
  std::unique_ptr<ModelGraph> graph_;                // LlamaGraph, or BertGraph for an encoder
  std::unique_ptr<OnDeviceSampler> device_sampler_;  // CUDA: sampling on the GPU
  ParallelChains parallel_chains_;                   // draft chains for the device sampler
  CpuWeightStats weight_stats_;
};

}  // namespace llmserve
