#include "engine/runner/model_runner.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/model/bert_config.h"
#include "engine/model/bert_graph.h"
#include "engine/model/quantize_model.h"

#include "engine/core/process_memory.h"

#include "engine/runner/stop_checker.h"

#ifdef LLMSERVE_HAVE_CUDA_BACKEND
#include "engine/runner/cuda/cuda_device.h"
#include "engine/runner/cuda/cuda_ops.h"
#include "engine/runner/cuda/device_sampler.h"
#include "llmserve/kernels/cuda/sampling_rows.h"
#endif

namespace llmserve {

bool cuda_backend_available() {
#ifdef LLMSERVE_HAVE_CUDA_BACKEND
  return cuda_device_count() > 0;
#else
  return false;
#endif
}

namespace {

// Logits rows one step may return: the sampled ones and the scored prompt rows.
int64_t logits_rows(const ModelRunnerOptions& o) {
  return o.max_samples_per_step + o.max_scored_rows_per_step;
}

#ifdef LLMSERVE_HAVE_CUDA_BACKEND
// One prefill of max_tokens_per_step tokens (as sequence 0) returning every logits row it may:
// the step with the largest activation footprint.
Status profile_forward(LlamaGraph& graph, const ModelRunnerOptions& o, int64_t blocks) {
  const int64_t T = o.max_tokens_per_step;
  const int64_t S = std::min<int64_t>(logits_rows(o), T);
  std::vector<int32_t> tokens(static_cast<size_t>(T), 0), positions(static_cast<size_t>(T));
  std::vector<int32_t> slots(static_cast<size_t>(T)), samples(static_cast<size_t>(S));
  std::vector<int32_t> query_start{0, static_cast<int32_t>(T)}, seq_lens{static_cast<int32_t>(T)};
  std::vector<int32_t> block_table(static_cast<size_t>(blocks));
  for (int64_t t = 0; t < T; ++t) {
    positions[static_cast<size_t>(t)] = static_cast<int32_t>(t);
    slots[static_cast<size_t>(t)] = static_cast<int32_t>(t);
  }
  for (int64_t b = 0; b < blocks; ++b)
    block_table[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  for (int64_t s = 0; s < S; ++s) samples[static_cast<size_t>(s)] = static_cast<int32_t>(T - S + s);
  std::vector<uint8_t> prefill{1};
  ForwardBatch fb{tokens, positions, query_start, seq_lens, block_table,
                  blocks, slots,     samples,     prefill,  0};
  return graph.forward(fb).status();
}

// Captures the decode graph of every bucket with a decode step of that many one-token
// sequences (all in block 0; the cache holds no request yet), so no request pays for a capture.
Status capture_decode_graphs(LlamaGraph& graph, CudaOps& cuda) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int bucket : cuda.graph_buckets()) {
    const auto n = static_cast<size_t>(bucket);
    std::vector<int32_t> tokens(n, 0), positions(n, 0), slots(n, 0), samples(n);
    std::vector<int32_t> query_start(n + 1), seq_lens(n, 1), block_table(n, 0);
    std::vector<uint8_t> prefill(n, 0);
    for (size_t i = 0; i < n; ++i) {
      query_start[i + 1] = static_cast<int32_t>(i + 1);
      samples[i] = static_cast<int32_t>(i);
    }
    ForwardBatch fb{tokens, positions, query_start, seq_lens, block_table,
                    1,      slots,     samples,     prefill,  static_cast<int64_t>(n)};
    cuda.capture_next_step();
    LLMSERVE_RETURN_IF_ERROR(graph.forward(fb).status());
    LLMSERVE_RETURN_IF_ERROR(cuda.status());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("CUDA graphs: {} decode buckets (1..{}) captured in {:.2f} s",
               cuda.num_decode_graphs(),
               cuda.graph_buckets().empty() ? 0 : cuda.graph_buckets().back(), s);
  return Status::ok();
}

Status create_cuda(const ModelRunnerOptions& o, const LoadedModel& model, std::unique_ptr<Ops>* ops,
                   std::unique_ptr<LlamaGraph>* graph, std::unique_ptr<OnDeviceSampler>* sampler) {
  const ModelConfig& cfg = model.config();
  CudaOpsOptions co;
  co.num_heads = static_cast<int>(cfg.num_heads);
  co.max_tokens = o.max_tokens_per_step;
  co.max_samples = logits_rows(o);
  co.max_num_seqs = o.max_num_seqs;
  co.max_model_len = std::max<int64_t>(o.max_model_len, o.max_tokens_per_step);
  co.cuda_graphs = o.cuda_graphs;
  LLMSERVE_ASSIGN_OR_RETURN(std::unique_ptr<CudaOps> cuda, CudaOps::create(co));
  // Profiling cache: just enough pages for the profiling prefill.
  const int64_t blocks = (o.max_tokens_per_step + o.block_size - 1) / o.block_size + 1;
  KvCacheSpec spec{cfg.num_layers, blocks, static_cast<int>(cfg.num_kv_heads), o.block_size,
                   static_cast<int>(cfg.head_dim)};
  spec.dtype = o.kv_cache_dtype;
  spec.sliding_window = cfg.sliding_window;
  if (!cfg.local_layers.empty()) spec.layer_windows = cfg.layer_windows();
  spec.symmetric_windows = cfg.bidirectional;
  LLMSERVE_RETURN_IF_ERROR(cuda->alloc_kv_cache(spec));
  LLMSERVE_ASSIGN_OR_RETURN(*graph, LlamaGraph::create(model, *cuda, o.max_tokens_per_step,
                                                       logits_rows(o), o.max_model_len));
  // Before the profiling pass, so the KV budget sees the sampler's buffers.
  const std::vector<int32_t> eos = o.eos_ids.empty() ? config_eos_ids(cfg) : o.eos_ids;
  const int64_t sparse =
      std::max<int64_t>(65536, o.max_samples_per_step * std::min<int64_t>(co.max_model_len, 8192));
  LLMSERVE_ASSIGN_OR_RETURN(
      *sampler,
      DeviceSampler::create(static_cast<int32_t>(cfg.vocab_size),
                            static_cast<int32_t>(o.max_samples_per_step), eos, cuda->stream(),
                            static_cast<int32_t>(std::min<int64_t>(sparse, INT32_MAX)),
                            std::min(o.max_logprobs, kernels::cuda::kMaxTopLogprobs)));
  LLMSERVE_RETURN_IF_ERROR(profile_forward(**graph, o, blocks));
  LLMSERVE_RETURN_IF_ERROR(cuda->status());
  LLMSERVE_ASSIGN_OR_RETURN(KvMemoryPlan plan, cuda->plan_kv_cache(o.gpu_memory_utilization));
  spdlog::info("CUDA KV cache: {}", plan.arithmetic);
  cuda->release_kv_cache();
  spec.num_blocks = plan.num_blocks;
  LLMSERVE_RETURN_IF_ERROR(cuda->alloc_kv_cache(spec));
  if (o.cuda_graphs) LLMSERVE_RETURN_IF_ERROR(capture_decode_graphs(**graph, *cuda));
  *ops = std::move(cuda);
  return Status::ok();
}
#endif

std::string gib(uint64_t bytes) {
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1u << 30));
}

// One start-up line: how long the CPU weights took, what was repacked (per source type), what
// stays per-row on the mapping, what left the RSS, and the memory after it.
void log_weight_stats(const CpuWeightStats& s) {
  int64_t n = 0;
  uint64_t src = 0, packed = 0;
  double pack_s = 0;
  std::string per_type;
  for (const auto& [type, p] : s.packed) {
    n += p.matrices;
    src += p.source_bytes;
    packed += p.packed_bytes;
    pack_s += p.seconds;
    per_type += fmt::format("{}{}: {}, {} in {:.3f} s", per_type.empty() ? "" : "; ", type,
                            p.matrices, gib(p.packed_bytes), p.seconds);
  }
  const ProcessMemory mem = process_memory();
  spdlog::info(
      "start-up: CPU weights ready in {:.3f} s: repacked {} matrices ({} -> {}) in {:.3f} s{}{}{}; "
      "{} matrices ({}) read per row from the mapping; released {} of mapped source pages; RSS {} "
      "(file-mapped {}), peak {}",
      s.seconds, n, gib(src), gib(packed), pack_s, per_type.empty() ? "" : " (", per_type,
      per_type.empty() ? "" : ")", s.unpacked_matrices, gib(s.unpacked_bytes),
      gib(s.released_bytes), mib_string(mem.rss_bytes), mib_string(mem.file_bytes),
      mib_string(mem.peak_bytes));
}

}  // namespace

Result<std::unique_ptr<ModelRunner>> ModelRunner::create(const ModelRunnerOptions& options) {
  LLMSERVE_ASSIGN_OR_RETURN(auto model, load_model(options.model_path));
  return create(std::move(model), options);
}

Result<std::unique_ptr<ModelRunner>> ModelRunner::create(std::unique_ptr<LoadedModel> model,
                                                         const ModelRunnerOptions& options) {
  if (model == nullptr) return invalid_argument("model runner: no model");
  if (options.block_size <= 0 || options.num_threads <= 0) {
    return invalid_argument("model runner: block_size and num_threads must be positive");
  }
  LLMSERVE_RETURN_IF_ERROR(model->check_tensors());
  LLMSERVE_ASSIGN_OR_RETURN(const std::optional<kernels::DType> quantize,
                            parse_model_quantize(options.quantize));
  if (quantize && options.use_cuda && *quantize != kernels::DType::F8_E4M3) {
    return failed_precondition(
        "model.quantize is " + options.quantize +
        " but on the CUDA backend only fp8 is (the GGUF formats run in bf16 there); set "
        "engine.device cpu, model.quantize fp8, or leave model.quantize empty");
  }
  if (quantize) {
    kernels::ThreadPool pool(options.num_threads);
    LLMSERVE_RETURN_IF_ERROR(quantize_model_weights(*model, *quantize, pool).status());
  }
  const ModelConfig& cfg = model->config();
  if (options.use_cuda) {
    if (options.kv_cache_dtype == kernels::KvDtype::kF32) {
      return unimplemented(
          "model runner: engine.kv_cache_dtype f32 is CPU-only; the CUDA backend stores bf16, int8 "
          "or fp8");
    }
    if (is_encoder_only(cfg)) {
      return unimplemented("model runner: the " + cfg.architecture +
                           " encoder runs on the CPU backend only; set engine.device cpu");
    }
    if (cfg.bidirectional) {
      return unimplemented(
          "model runner: bidirectional attention (EmbeddingGemma) runs on the CPU backend only; "
          "set engine.device cpu");
    }
#ifdef LLMSERVE_HAVE_CUDA_BACKEND
    std::unique_ptr<ModelRunner> r(new ModelRunner());
    r->options_ = options;
    r->model_ = std::move(model);
    std::unique_ptr<LlamaGraph> graph;
    LLMSERVE_RETURN_IF_ERROR(
        create_cuda(options, *r->model_, &r->ops_, &graph, &r->device_sampler_));
    r->graph_ = std::move(graph);
    return r;
#else
    return unimplemented("model runner: this binary was built without the CUDA backend");
#endif
  }
  if (options.kv_cache_dtype == kernels::KvDtype::kFp8) {
    return unimplemented(
        "model runner: engine.kv_cache_dtype fp8 needs the CUDA backend; on the CPU use int8 (half "
        "the bytes of f16), f16 or f32");
  }
  const kernels::KvDtype dtype = options.kv_cache_dtype;
  const uint64_t block_bytes =
      cfg.kv_bytes_per_token(dtype) * static_cast<uint64_t>(options.block_size);
  const uint64_t num_blocks = block_bytes == 0 ? 0 : options.kv_cache_bytes / block_bytes;
  if (num_blocks == 0) {
    return invalid_argument("model runner: kv_cache_bytes " +
                            std::to_string(options.kv_cache_bytes) + " holds no block of " +
                            std::to_string(block_bytes) + " bytes (" + cfg.kv_bytes_formula(dtype) +
                            " per token)");
  }
  std::unique_ptr<ModelRunner> r(new ModelRunner());
  r->options_ = options;
  if (!r->options_.matmul_precision) {
    r->options_.matmul_precision = matmul_precision_for_weights(model->tensors());
  }
  r->model_ = std::move(model);
  auto cpu = std::make_unique<CpuOps>(options.num_threads, *r->options_.matmul_precision);
  CpuOps& cpu_ops = *cpu;
  r->ops_ = std::move(cpu);
  KvCacheSpec spec;
  spec.num_layers = cfg.num_layers;
  spec.num_blocks = static_cast<int64_t>(num_blocks);
  spec.num_kv_heads = static_cast<int>(cfg.num_kv_heads);
  spec.block_size = options.block_size;
  spec.head_dim = static_cast<int>(cfg.head_dim);
  spec.dtype = options.kv_cache_dtype;
  spec.sliding_window = cfg.sliding_window;
  if (!cfg.local_layers.empty()) spec.layer_windows = cfg.layer_windows();
  spec.symmetric_windows = cfg.bidirectional;
  LLMSERVE_RETURN_IF_ERROR(r->ops_->alloc_kv_cache(spec));
  if (is_encoder_only(cfg)) {
    LLMSERVE_ASSIGN_OR_RETURN(r->graph_,
                              BertGraph::create(*r->model_, *r->ops_, options.max_tokens_per_step));
  } else {
    LLMSERVE_ASSIGN_OR_RETURN(r->graph_,
                              LlamaGraph::create(*r->model_, *r->ops_, options.max_tokens_per_step,
                                                 logits_rows(options), options.max_model_len));
  }
  cpu_ops.release_sources_again();
  r->weight_stats_ = cpu_ops.weight_stats();
  log_weight_stats(r->weight_stats_);
  return r;
}

ModelRunner::ModelRunner() = default;
ModelRunner::~ModelRunner() = default;

Result<std::span<const float>> ModelRunner::execute(const ForwardBatch& batch) {
  return graph_->forward(batch);
}

Result<std::vector<SampleResult>> ModelRunner::execute_and_sample(const ForwardBatch& batch,
                                                                  std::span<const SampleRow> rows,
                                                                  Sampler& sampler) {
  if (static_cast<int64_t>(rows.size()) != batch.num_samples()) {
    return invalid_argument("model runner: " + std::to_string(rows.size()) +
                            " sample rows for a batch sampling " +
                            std::to_string(batch.num_samples()));
  }
  if (device_sampler_ != nullptr && device_sampler_->eos_ids() != sampler.eos_ids()) {
    return failed_precondition(
        "model runner: the sampler's eos ids differ from ModelRunnerOptions::eos_ids");
  }
  std::span<const float> logits;
  if (device_sampler_ != nullptr) {
    LLMSERVE_ASSIGN_OR_RETURN(const float* device_logits, graph_->forward_logits(batch));
    if (rows.empty()) return std::vector<SampleResult>();
    // Scored prompt rows (prompt logprobs) are scored on the host with the step's other rows.
    // Rows with a grammar stay on the device: the pack carries each one's bitmask (its
    // matcher, advanced over the chain's drafts by parallel_chains_, fills it on the host).
    const bool host_rows =
        std::any_of(rows.begin(), rows.end(), [](const SampleRow& r) { return r.score >= 0; });
    if (!host_rows) {
      Result<std::vector<SampleResult>> sampled =
          device_sampler_->sample(device_logits, parallel_chains_.prepare(rows));
      if (sampled.is_ok()) parallel_chains_.finish(*sampled);
      if (sampled.is_ok() || sampled.status().code() != StatusCode::kResourceExhausted) {
        return sampled;
      }
      // Sparse edits over the device buffers (a repetition penalty over a very long prompt):
      // this step samples on the host.
    }
    logits = ops_->to_host(device_logits, batch.num_samples() * config().vocab_size);
    LLMSERVE_RETURN_IF_ERROR(ops_->step_status());
  } else {
    LLMSERVE_ASSIGN_OR_RETURN(logits, graph_->forward(batch));
  }
  return sample_chains(sampler, logits, rows);
}

size_t ModelRunner::num_decode_graphs() const {
#ifdef LLMSERVE_HAVE_CUDA_BACKEND
  if (const auto* cuda = dynamic_cast<const CudaOps*>(ops_.get())) return cuda->num_decode_graphs();
#endif
  return 0;
}

}  // namespace llmserve
