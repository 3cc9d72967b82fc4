#include "engine/runner/model_runner.h"

#include <string>
#include <utility>

namespace llmserve {

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
  const ModelConfig& cfg = model->config();
  const uint64_t block_bytes =
      cfg.kv_bytes_per_token(4) * static_cast<uint64_t>(options.block_size);
  const uint64_t num_blocks = block_bytes == 0 ? 0 : options.kv_cache_bytes / block_bytes;
  if (num_blocks == 0) {
    return invalid_argument("model runner: kv_cache_bytes " +
                            std::to_string(options.kv_cache_bytes) + " holds no block of " +
                            std::to_string(block_bytes) + " bytes (" + cfg.kv_bytes_formula(4) +
                            " per token)");
  }
  std::unique_ptr<ModelRunner> r(new ModelRunner());
  r->options_ = options;
  r->model_ = std::move(model);
  r->ops_ = std::make_unique<CpuOps>(options.num_threads, options.matmul_precision);
  KvCacheSpec spec;
  spec.num_layers = cfg.num_layers;
  spec.num_blocks = static_cast<int64_t>(num_blocks);
  spec.num_kv_heads = static_cast<int>(cfg.num_kv_heads);
  spec.block_size = options.block_size;
  spec.head_dim = static_cast<int>(cfg.head_dim);
  LLMSERVE_RETURN_IF_ERROR(r->ops_->alloc_kv_cache(spec));
  LLMSERVE_ASSIGN_OR_RETURN(r->graph_,
                            LlamaGraph::create(*r->model_, *r->ops_, options.max_tokens_per_step,
                                               options.max_samples_per_step));
  return r;
}

Result<std::span<const float>> ModelRunner::execute(const ForwardBatch& batch) {
  return graph_->forward(batch);
}

}  // namespace llmserve
