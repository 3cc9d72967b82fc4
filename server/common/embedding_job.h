// Runs pooling requests (engine/pooling) for any transport: one engine request per input, all
// submitted at once (they share the engine's steps), and their vectors in input order.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/engine.h"
#include "server/common/generation_job.h"

namespace llmserve {

struct EmbeddingResult {
  std::vector<std::vector<float>> vectors;  // one per input, in input order
  int64_t prompt_tokens = 0;                // summed over the inputs
};

// kEmbed: sentence vectors. kScore: a reranker's scores (each input a rerank_prompt_ids
// prompt; each vector one value, P("yes")).
enum class PoolingUse { kEmbed, kScore };

// The refusal of `use` by this engine's model (a reranker has no embeddings, a model that is not
// one has no scores), naming what to use instead; OK when the model serves it.
Status check_pooling_use(const Engine& engine, PoolingUse use);

// Submits one pooling request per input (non-empty token ids). dimensions:
// PoolingParams::dimensions. timeout 0: none. Errors: check_pooling_use's; a submit error (the
// engine's validation: token ids, length, dimensions; a full queue); the ones already submitted
// are aborted.
Result<std::unique_ptr<GenerationJob>> start_embeddings(Engine& engine,
                                                        std::vector<std::vector<int32_t>> inputs,
                                                        int32_t dimensions,
                                                        const std::string& external_id,
                                                        std::chrono::milliseconds timeout,
                                                        PoolingUse use = PoolingUse::kEmbed);

// Reads a started job to its end. Errors: an engine error on a request, DEADLINE_EXCEEDED past
// the timeout, CANCELLED when the job was cancelled.
Result<EmbeddingResult> collect_embeddings(GenerationJob& job);

// start_embeddings then collect_embeddings.
Result<EmbeddingResult> run_embeddings(Engine& engine, std::vector<std::vector<int32_t>> inputs,
                                       int32_t dimensions, const std::string& external_id,
                                       std::chrono::milliseconds timeout,
                                       PoolingUse use = PoolingUse::kEmbed);

}  // namespace llmserve
