// Engine::create: loads the model, tokenizer and chat template, sizes the KV cache from the
// byte budget (logging the arithmetic), builds the scheduler and starts the engine thread.
#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "engine/chat/chat_template.h"
#include "engine/core/process_memory.h"
#include "engine/kv_cache/kv_cache_manager.h"
#include "engine/kv_offload/kv_offloader.h"
#if LLMSERVE_HAVE_KV_OFFLOAD_CUDA
#include "engine/kv_offload/cuda/kv_cuda_block_io.h"
#endif
#include "engine/llm_engine.h"
#include "engine/model/bert_config.h"
#include "engine/model/moe_tensors.h"
#include "engine/pooling/pooler.h"
#include "engine/pooling/pooling_config.h"
#include "engine/pooling/rank_head.h"
#include "engine/runner/model_runner.h"
#include "engine/runner/stop_checker.h"
#include "engine/scheduler/scheduler.h"
#include "engine/spec/make_proposer.h"
#include "engine/spec/verify_cost.h"
#include "engine/tokenizer/load_tokenizer.h"
#include "engine/vision/image_encoder.h"
#include "llmserve/kernels/cpu_isa.h"

namespace llmserve {
namespace {

Status check_options(const EngineOptions& o) {
  if (o.model_path.empty()) return invalid_argument("engine: model_path is empty");
  if (o.device != "auto" && o.device != "cpu" && o.device != "cuda") {
    return invalid_argument("engine: device must be auto, cpu or cuda, got '" + o.device + "'");
  }
  if (o.device == "cuda" && !cuda_backend_available()) {
    return unavailable(
        "engine.device is cuda but no CUDA device is usable (no GPU or driver, or a binary built "
        "without CUDA); use engine.device auto or cpu");
  }
  if (!kernels::parse_kv_dtype(o.kv_cache_dtype)) {
    return invalid_argument("engine: kv_cache_dtype must be f16, f32, int8 or fp8, got '" +
                            o.kv_cache_dtype + "'");
  }
  if (o.block_size < 1) return invalid_argument("engine: block_size must be >= 1");
  if (o.max_num_seqs < 1 || o.max_num_batched_tokens < 1) {
    return invalid_argument("engine: max_num_seqs and max_num_batched_tokens must be >= 1");
  }
  if (o.max_model_len < 0) return invalid_argument("engine: max_model_len must be >= 0");
  if (o.max_scored_tokens_per_step < 1) {
    return invalid_argument("engine: max_scored_tokens_per_step must be >= 1");
  }
  const KvTransferOptions& kt = o.kv_transfer;
  if (kt.role != "none" && !kt.produces() && !kt.consumes()) {
    return invalid_argument("kv_transfer.role must be none, producer, consumer or both, got '" +
                            kt.role + "'");
  }
  if (kt.port < 0 || kt.port > 65535) return invalid_argument("kv_transfer.port must be 0-65535");
  if (!(kt.lease_seconds > 0) || !(kt.pull_timeout_seconds > 0)) {
    return invalid_argument("kv_transfer.lease_seconds and pull_timeout_seconds must be > 0");
  }
  return o.speculative.validate();
}

}  // namespace

Status apply_cpu_isa(const std::string& name) {
  const auto isa = kernels::parse_cpu_isa(name);
  if (!isa) {
    return invalid_argument("engine: cpu_isa must be auto, avx2 or avx512, got '" + name + "'");
  }
  if (!kernels::cpu_supports(*isa)) {
    return failed_precondition(
        "engine.cpu_isa is " + name + " but this CPU lacks it (" +
        (*isa == kernels::CpuIsa::kAvx512 ? "AVX-512F/BW/VL/DQ" : "AVX2/FMA") +
        "); use engine.cpu_isa auto");
  }
  kernels::set_cpu_isa(*isa);
  return Status::ok();
}

// The tiers below the page pool (engine/kv_offload): how blocks are copied (a memcpy on the CPU
// backend, a side stream on CUDA), the fingerprint of what shapes this cache's pages, the host
// tier, the disk tier (indexing what an earlier run left) and the worker.
static Result<std::unique_ptr<KvBlockIo>> make_kv_block_io(const ModelRunner& runner,
                                                           std::vector<uint64_t>& array_bytes) {
  if (const auto memory = runner.kv_host_memory()) {
    for (const KvHostArray& a : memory->arrays) array_bytes.push_back(a.block_bytes);
    return std::unique_ptr<KvBlockIo>(new KvHostBlockIo(*memory));
  }
#if LLMSERVE_HAVE_KV_OFFLOAD_CUDA
  if (auto memory = runner.kv_device_memory()) {
    for (const KvDeviceArray& a : memory->arrays) array_bytes.push_back(a.block_bytes);
    LLMSERVE_ASSIGN_OR_RETURN(auto io, KvCudaBlockIo::create(std::move(*memory)));
    return std::unique_ptr<KvBlockIo>(std::move(io));
  }
#endif
  return failed_precondition(
      "kv_offload.host_bytes / kv_offload.disk_bytes > 0: this backend's KV cache is neither in "
      "host memory nor in CUDA device memory this binary can copy (built without CUDA)");
}

static Result<std::unique_ptr<KvOffloader>> make_kv_offloader(const EngineOptions& options,
                                                              const ModelConfig& cfg,
                                                              const ModelRunner& runner,
                                                              std::function<void()> wake) {
  KvFingerprintInputs in;
  LLMSERVE_ASSIGN_OR_RETURN(std::unique_ptr<KvBlockIo> io,
                            make_kv_block_io(runner, in.array_block_bytes));
  LLMSERVE_ASSIGN_OR_RETURN(in.weights_identity, kv_weights_identity(options.model_path));
  in.backend = runner.backend();
  in.compute =
      fmt::format("matmul={} quantize={} isa={}", matmul_precision_name(runner.matmul_precision()),
                  options.quantize, kernels::cpu_isa_name(kernels::active_cpu_isa()));
  in.kv_dtype = kernels::kv_dtype_name(runner.kv_dtype());
  in.block_size = options.block_size;
  in.num_layers = static_cast<int32_t>(cfg.num_layers);
  in.num_kv_heads = static_cast<int32_t>(cfg.num_kv_heads);
  in.head_dim = static_cast<int32_t>(cfg.head_dim);
  const RopeScaling& rs = cfg.rope_scaling;
  in.rope = fmt::format(
      "theta={} dim={} interleaved={} scaling={} factor={} low={} high={} orig={} "
      "attn={} short={} long={} local_theta={}",
      cfg.rope_theta, cfg.rope_dim, cfg.rope_interleaved, rope_scaling_name(rs.type), rs.factor,
      rs.low_freq_factor, rs.high_freq_factor, rs.original_max_position, rs.attention_factor,
      fmt::join(rs.short_factor, ","), fmt::join(rs.long_factor, ","), cfg.rope_local_theta);
  KvFingerprint fp = kv_fingerprint(in);
  const KvOffloadOptions& ko = options.kv_offload;
  std::unique_ptr<KvHostTier> host;
  if (ko.host_bytes > 0) {
    LLMSERVE_ASSIGN_OR_RETURN(host, KvHostTier::create(ko.host_bytes, io->block_bytes(), *io));
    spdlog::info("KV tiers: host memory ({}) budget {} bytes ({} pages of {} bytes)",
                 io->host_memory_kind(), ko.host_bytes, host->capacity_pages(), io->block_bytes());
  }
  std::unique_ptr<KvDiskTier> disk;
  if (ko.disk_bytes > 0) {
    LLMSERVE_ASSIGN_OR_RETURN(disk, KvDiskTier::open(ko.disk_path, ko.disk_bytes, fp.digest,
                                                     static_cast<uint32_t>(options.block_size)));
    const KvDiskTierStats ds = disk->stats();
    spdlog::info(
        "KV tiers: disk {} budget {} bytes ({} pages of {} bytes); loaded {} pages ({} bytes) "
        "from an earlier run, {} torn or corrupted deleted, {} of another fingerprint skipped; "
        "fingerprint {:016x}{:016x}",
        ko.disk_path, ko.disk_bytes,
        ko.disk_bytes / static_cast<int64_t>(io->block_bytes() + kKvPageHeaderBytes),
        io->block_bytes(), ds.loaded_pages, ds.bytes, ds.corrupt_pages, ds.foreign_pages,
        fp.digest.hi, fp.digest.lo);
  }
  spdlog::debug("KV tiers: fingerprint of {}", fp.text);
  return std::make_unique<KvOffloader>(ko, std::move(io), std::move(fp),
                                       static_cast<uint32_t>(options.block_size), std::move(host),
                                       std::move(disk), std::move(wake));
}

Result<std::unique_ptr<Engine>> Engine::create(const EngineOptions& options) {
  LLMSERVE_RETURN_IF_ERROR(check_options(options));
  LLMSERVE_RETURN_IF_ERROR(apply_cpu_isa(options.cpu_isa));
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const auto t_start = Clock::now();
  LLMSERVE_ASSIGN_OR_RETURN(auto tokenizer, load_tokenizer(options.model_path));
  const double tokenizer_s = seconds_since(t_start);
  const auto t_map = Clock::now();
  LLMSERVE_ASSIGN_OR_RETURN(auto model, load_model(options.model_path));
  spdlog::info(
      "start-up: model mapped in {:.3f} s ({} tensors, {:.2f} GiB of weights, {} parameters, {} "
      "active per token; KV {} bytes per token at f16; tokenizer {:.3f} s)",
      seconds_since(t_map), model->tensors().size(),
      static_cast<double>(model->weight_bytes()) / (1u << 30), model->parameter_count(),
      active_parameter_count(*model), model->config().kv_bytes_per_token(kernels::KvDtype::kF16),
      tokenizer_s);
  const ModelConfig cfg = model->config();

  int32_t max_model_len = options.max_model_len;
  if (cfg.max_context > 0) {
    max_model_len = max_model_len == 0
                        ? static_cast<int32_t>(std::min<int64_t>(cfg.max_context, INT32_MAX))
                        : std::min<int32_t>(max_model_len, static_cast<int32_t>(cfg.max_context));
  }
  if (max_model_len < 2) return invalid_argument("engine: max_model_len must be >= 2");

  ModelRunnerOptions ro;
  ro.model_path = options.model_path;
  ro.num_threads = options.threads > 0
                       ? options.threads
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  LLMSERVE_ASSIGN_OR_RETURN(ro.matmul_precision,
                            parse_matmul_precision_setting(options.cpu_matmul_precision));
  ro.kv_cache_dtype = *kernels::parse_kv_dtype(options.kv_cache_dtype);
  ro.kv_cache_bytes = options.kv_cache_bytes;
  if (cfg.pooling_only()) {
    // An encoder writes no KV (a bidirectional decoder's is dropped after its one step); its
    // requests still hold blocks while they run (one step): enough for a full step of
    // max_num_seqs requests, not the configured budget.
    const uint64_t blocks = static_cast<uint64_t>(
        options.max_num_batched_tokens / options.block_size + options.max_num_seqs + 2);
    ro.kv_cache_bytes = std::min<uint64_t>(options.kv_cache_bytes,
                                           blocks * static_cast<uint64_t>(options.block_size) *
                                               cfg.kv_bytes_per_token(ro.kv_cache_dtype));
  }
  ro.quantize = options.quantize;
  ro.block_size = options.block_size;
  ro.max_tokens_per_step = options.max_num_batched_tokens;
  // A request verifying k drafts samples k + 1 rows, each its own decode row in the batch, and
  // only steps with at most speculative.max_running_requests running requests draft.
  const int64_t drafting_seqs =
      options.speculative.enabled()
          ? std::min<int64_t>(options.max_num_seqs, options.speculative.max_running_requests)
          : 0;
  const int64_t max_rows =
      std::min<int64_t>(options.max_num_seqs + drafting_seqs * options.speculative.num_tokens,
                        options.max_num_batched_tokens);
  ro.max_samples_per_step = std::max<int64_t>(max_rows, options.max_num_seqs);
  ro.max_scored_rows_per_step = options.max_scored_tokens_per_step;
  ro.max_logprobs = options.max_logprobs;
  ro.use_cuda = options.device == "cuda" || (options.device == "auto" && cuda_backend_available());
  ro.gpu_memory_utilization = options.gpu_memory_utilization;
  ro.max_num_seqs = static_cast<int>(std::max<int64_t>(max_rows, options.max_num_seqs));
  ro.max_model_len = max_model_len;
  ro.cuda_graphs = options.cuda_graphs;
  ro.eos_ids = generation_eos_ids(*tokenizer, cfg);
  // Before the runner takes the model: the pooler copies the final norm (and the config reads
  // the sentence-transformers files beside the weights).
  LLMSERVE_ASSIGN_OR_RETURN(std::optional<PoolingConfig> pooling, load_pooling_config(*model));
  LLMSERVE_ASSIGN_OR_RETURN(std::optional<RankHead> rank, load_rank_head(*model, *tokenizer));
  if (rank) {  // a reranker scores its prompts' last row; it has no sentence vectors
    PoolingConfig p;
    p.normalize = false;
    p.source = rank->source;
    p.rank = std::move(rank);
    pooling = std::move(p);
  }
  const bool pooling_declared = pooling.has_value();
  LLMSERVE_ASSIGN_OR_RETURN(std::unique_ptr<Pooler> pooler,
                            Pooler::create(*model, pooling.value_or(PoolingConfig{})));
  spdlog::info("pooling: {}{} pooling{}{}, {} dimensions ({})",
               pooler->is_reranker() ? "reranker, yes/no score at the " : "",
               pooling_type_name(pooler->config().type),
               pooler->config().dense.empty()
                   ? ""
                   : fmt::format(", {} Dense layer(s)", pooler->config().dense.size()),
               pooler->config().normalize ? ", L2-normalised" : "", pooler->width(),
               pooling_declared ? pooler->config().source
                                : "the model declares none: last token, normalised");
  LLMSERVE_ASSIGN_OR_RETURN(auto runner, ModelRunner::create(std::move(model), ro));
  Speculation speculation{options.speculative, nullptr, nullptr};
  // The proposer first: a draft model it refuses stops start-up before the cost is measured.
  LLMSERVE_ASSIGN_OR_RETURN(speculation.proposer,
                            make_proposer(options.speculative, *tokenizer, *runner, ro));
  if (options.speculative.enabled() && options.speculative.draft_token_cost < 0) {
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<double> costs,
                              measure_check_costs(*runner, options.speculative.num_tokens));
    speculation.config.draft_token_cost = per_draft_cost(costs);
    std::string table;
    for (size_t d = 1; d < costs.size(); ++d) {
      table += fmt::format("{}{}: {:.2f}", d > 1 ? ", " : "", d, costs[d]);
    }
    spdlog::info(
        "speculative: a check of d drafts costs (d: decode steps, measured) {}; {:.3f} per draft "
        "at {}",
        table, speculation.config.draft_token_cost, options.speculative.num_tokens);
    speculation.check_costs = std::make_shared<const std::vector<double>>(std::move(costs));
  }

  const uint64_t per_token = cfg.kv_bytes_per_token(runner->kv_dtype());
  const auto num_blocks = static_cast<int32_t>(std::min<int64_t>(runner->num_blocks(), INT32_MAX));
  if (num_blocks < 2) {
    return invalid_argument(
        "engine: kv_cache_bytes " +
        std::to_string(ro.use_cuda ? runner->kv_cache_bytes() : ro.kv_cache_bytes) + " holds " +
        std::to_string(num_blocks) + " KV blocks; at least 2 are needed (" +
        cfg.kv_bytes_formula(runner->kv_dtype()) + ")");
  }
  spdlog::info(
      "KV cache: {}; block of {} tokens = {} bytes; budget {} bytes / {} = {} blocks "
      "(1 reserved) = {} tokens",
      cfg.kv_bytes_formula(runner->kv_dtype()), options.block_size,
      per_token * static_cast<uint64_t>(options.block_size),
      ro.use_cuda ? runner->kv_cache_bytes() : ro.kv_cache_bytes,
      per_token * static_cast<uint64_t>(options.block_size), num_blocks,
      int64_t{num_blocks - 1} * options.block_size);

  const int64_t cache_tokens = int64_t{num_blocks - 1} * options.block_size;
  if (max_model_len > cache_tokens) {
    spdlog::warn(
        "the context limit ({} tokens, model.max_model_len) exceeds what the KV cache holds ({} "
        "tokens): longer requests get 400; raise engine.kv_cache_bytes (or "
        "engine.gpu_memory_utilization) or lower model.max_model_len",
        max_model_len, cache_tokens);
  }
  // An encoder (BERT) writes no KV, and a bidirectional decoder's KV depends on the tokens after
  // it (EmbeddingGemma): nothing of their pages may be cached, moved or offloaded.
  const bool encoder = cfg.pooling_only();
  const std::string what = cfg.architecture + (cfg.bidirectional ? " bidirectional" : "");
  if (encoder && (options.kv_transfer.role != "none" || options.kv_offload.enabled())) {
    return failed_precondition("engine: the " + what +
                               " encoder keeps no KV cache; kv_transfer.role must be none and "
                               "kv_offload off");
  }
  if (encoder && options.enable_prefix_caching) {
    spdlog::info("prefix caching: off for the {} encoder (it keeps no KV)", what);
  }
  SchedulerConfig sc;
  sc.max_num_batched_tokens = options.max_num_batched_tokens;
  sc.max_num_seqs = options.max_num_seqs;
  sc.max_model_len = max_model_len;
  sc.enable_chunked_prefill = options.enable_chunked_prefill;
  sc.max_scored_tokens_per_step = options.max_scored_tokens_per_step;
  LLMSERVE_ASSIGN_OR_RETURN(
      auto scheduler,
      Scheduler::create(
          sc, KvCacheManager(num_blocks, options.block_size,
                             options.enable_prefix_caching && !encoder, cfg.sliding_window)));

  std::unique_ptr<KvTransferAgent> kv_agent;
  auto kv_wake = std::make_shared<std::function<void()>>();
  if (options.kv_transfer.role != "none") {
    KvLayout layout;
    layout.model = model_name_of(options.model_path);
    layout.block_size = options.block_size;
    layout.kv_dtype = kernels::kv_dtype_name(runner->kv_dtype());
    layout.num_layers = static_cast<int32_t>(cfg.num_layers);
    layout.num_kv_heads = static_cast<int32_t>(cfg.num_kv_heads);
    layout.head_dim = static_cast<int32_t>(cfg.head_dim);
    LLMSERVE_ASSIGN_OR_RETURN(
        kv_agent,
        KvTransferAgent::create(options.kv_transfer, layout, runner->kv_host_memory(), [kv_wake] {
          if (*kv_wake) (*kv_wake)();
        }));
    spdlog::info("kv transfer: role {}, engine id {}, UCX transport on {}:{}",
                 options.kv_transfer.role, kv_agent->engine_id(), options.kv_transfer.host,
                 kv_agent->port());
  }
  std::unique_ptr<KvOffloader> offloader;
  if (options.kv_offload.enabled()) {
    LLMSERVE_ASSIGN_OR_RETURN(offloader, make_kv_offloader(options, cfg, *runner, [kv_wake] {
                                if (*kv_wake) (*kv_wake)();
                              }));
  }
  // A vision tower: loaded and run once on a blank image, so its scratch is allocated now with
  // the KV cache (never mid-request); an image must fit one step's token budget.
  std::unique_ptr<vision::ImageEncoder> image_encoder;
  if (vision::has_vision_tower(options.model_path)) {
    const auto t_vision = Clock::now();
    vision::ImageEncoderOptions vo;
    vo.threads = ro.num_threads;
    vo.cache_bytes = options.image_cache_bytes;
    LLMSERVE_ASSIGN_OR_RETURN(image_encoder, vision::ImageEncoder::create(options.model_path, vo));
    const vision::VisionConfig& vc = image_encoder->config();
    if (vc.mm_tokens_per_image > options.max_num_batched_tokens) {
      return invalid_argument("engine.max_num_batched_tokens (" +
                              std::to_string(options.max_num_batched_tokens) + ") is below the " +
                              std::to_string(vc.mm_tokens_per_image) +
                              " tokens of one image, which run in one step");
    }
    if (vc.text_hidden != cfg.hidden_size) {
      return invalid_argument(options.model_path + ": the projector gives " +
                              std::to_string(vc.text_hidden) +
                              " floats per row; the text model's "
                              "hidden size is " +
                              std::to_string(cfg.hidden_size));
    }
    if (ro.use_cuda) {
      spdlog::warn("vision: the CUDA backend runs no image rows yet; image requests will fail");
    }
    spdlog::info(
        "vision: SigLIP {} layers, {} px, {} soft tokens per image (token {}); tower on the CPU, "
        "{} threads; scratch {} bytes allocated at start-up; encoder cache budget {} bytes; "
        "ready in {:.3f} s",
        vc.num_layers, vc.image_size, vc.mm_tokens_per_image, vc.image_token_id, vo.threads,
        image_encoder->scratch_bytes(), vo.cache_bytes, seconds_since(t_vision));
  }
  std::unique_ptr<ChatTemplate> chat_template;
  const std::string& source = options.chat_template_override.empty()
                                  ? tokenizer->spec().chat_template
                                  : options.chat_template_override;
  if (!source.empty()) {
    auto parsed = ChatTemplate::parse(source);
    if (parsed.is_ok()) {
      chat_template = std::make_unique<ChatTemplate>(std::move(parsed).value());
    } else if (!options.chat_template_override.empty()) {
      return parsed.status();
    } else {
      spdlog::warn("the model's chat template does not parse ({}); chat is disabled",
                   parsed.status().message());
    }
  }
  spdlog::info(
      "engine: {} on {}, {} threads, {} matmul activations, CPU kernels {}, max_model_len {}, "
      "max_num_seqs {}, "
      "max_num_batched_tokens {}, prefix caching {}, chunked prefill {}",
      options.model_path, runner->backend(), ro.num_threads,
      matmul_precision_name(runner->matmul_precision()) +
          (options.cpu_matmul_precision == "by_format" ? " (by_format)" : ""),
      kernels::cpu_isa_name(kernels::active_cpu_isa()), max_model_len, options.max_num_seqs,
      options.max_num_batched_tokens, options.enable_prefix_caching && !encoder ? "on" : "off",
      options.enable_chunked_prefill ? "on" : "off");
  const ProcessMemory mem = process_memory();
  spdlog::info("start-up: engine ready in {:.3f} s; RSS {} (file-mapped {}), peak {}",
               seconds_since(t_start), mib_string(mem.rss_bytes), mib_string(mem.file_bytes),
               mib_string(mem.peak_bytes));
  auto engine = std::make_unique<LlmEngine>(
      options, std::move(tokenizer), std::move(chat_template), std::move(runner),
      std::move(scheduler), max_model_len, std::move(speculation), std::move(kv_agent), kv_wake,
      std::shared_ptr<const Pooler>(std::move(pooler)), std::move(offloader));
  engine->set_image_encoder(std::move(image_encoder));
  return std::unique_ptr<Engine>(std::move(engine));
}

}  // namespace llmserve
