#include "server/common/embedding_job.h"

#include "engine/pooling/pooler.h"

namespace llmserve {

Status check_pooling_use(const Engine& engine, PoolingUse use) {
  const Pooler* p = engine.pooler();
  if (p == nullptr) return invalid_argument("this model cannot pool (no embeddings, no scores)");
  if (p->is_reranker() && use == PoolingUse::kEmbed) {
    return invalid_argument(
        "this model is a reranker (Qwen3-Reranker: a yes/no score of a query and a document); it "
        "has no embeddings: use /v1/rerank, /v2/rerank, /rerank or /score");
  }
  if (!p->is_reranker() && use == PoolingUse::kScore) {
    return invalid_argument("this model is not a reranker: it has no yes/no score");
  }
  return Status::ok();
}

Result<std::unique_ptr<GenerationJob>> start_embeddings(
    Engine& engine, std::vector<std::vector<int32_t>> inputs, int32_t dimensions,
    const std::string& external_id, std::chrono::milliseconds timeout, PoolingUse use) {
  LLMSERVE_RETURN_IF_ERROR(check_pooling_use(engine, use));
  if (inputs.empty()) return invalid_argument("input: must not be empty");
  std::vector<GenerateRequest> reqs;
  reqs.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    GenerateRequest r;
    r.external_id = inputs.size() == 1 ? external_id : external_id + "-" + std::to_string(i);
    r.prompt_token_ids = std::move(inputs[i]);
    r.params.max_tokens = 0;
    r.pooling = PoolingParams{dimensions};
    if (timeout.count() > 0) r.deadline = std::chrono::steady_clock::now() + timeout;
    reqs.push_back(std::move(r));
  }
  return GenerationJob::start(engine, std::move(reqs));
}

Result<EmbeddingResult> collect_embeddings(GenerationJob& job) {
  EmbeddingResult out;
  out.vectors.resize(job.num_prompts());
  std::vector<bool> done(job.num_prompts(), false);
  Status failure;
  while (true) {
    auto ev = job.next(std::chrono::milliseconds(100));
    if (!ev) {
      if (job.timed_out() && !job.cancelled()) continue;  // the engine's deadline ends it
      break;
    }
    StepOutput& o = ev->output;
    if (o.finish == FinishReason::kNone) continue;
    if (o.finish == FinishReason::kStop) {
      out.vectors[ev->prompt_index] = std::move(o.embedding);
      out.prompt_tokens += o.usage.prompt_tokens;
      done[ev->prompt_index] = true;
    } else if (failure.is_ok()) {
      failure = o.finish == FinishReason::kTimeout
                    ? Status{StatusCode::kDeadlineExceeded,
                             "the embeddings request ran past its deadline"}
                : !o.error.is_ok() ? o.error
                                   : unavailable("the embeddings request was aborted");
    }
  }
  if (job.cancelled())
    return Status{StatusCode::kCancelled, "the embeddings request was cancelled"};
  if (!failure.is_ok()) return failure;
  for (bool d : done) {
    if (!d) return internal_error("an embeddings input ended without its vector");
  }
  return out;
}

Result<EmbeddingResult> run_embeddings(Engine& engine, std::vector<std::vector<int32_t>> inputs,
                                       int32_t dimensions, const std::string& external_id,
                                       std::chrono::milliseconds timeout, PoolingUse use) {
  LLMSERVE_ASSIGN_OR_RETURN(
      auto job, start_embeddings(engine, std::move(inputs), dimensions, external_id, timeout, use));
  return collect_embeddings(*job);
}

}  // namespace llmserve
