// What a front end hands the engine, and what the engine streams back (DESIGN §2).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/image_spans.h"
#include "engine/core/status.h"
#include "engine/grammar/compiled_grammar.h"
#include "engine/kv_transfer/kv_handoff.h"
#include "engine/pooling/pooling_params.h"
#include "engine/reasoning/reasoning_budget.h"
#include "engine/sampling_params.h"

namespace llmserve {

// An image of the prompt (engine/vision): its soft-token rows, the content hash of its decoded
// pixels (vision::image_content_hash; keys the prefix cache's blocks that hold its rows) and its
// projected features [span.length, hidden size] f32 (vision::ImageEncoder makes them).
struct PromptImage {
  ImageSpan span;
  uint64_t content_hash = 0;
  std::shared_ptr<const std::vector<float>> features;
};

struct GenerateRequest {
  std::string external_id;                // client-visible id ("cmpl-..."); may be empty
  std::vector<int32_t> prompt_token_ids;  // non-empty; ids < vocab size
  SamplingParams params;
  int32_t priority = 0;                                           // lower value is served first
  std::optional<std::chrono::steady_clock::time_point> deadline;  // finish reason kTimeout after
  // Structured outputs: every sample's tokens follow this grammar (GrammarCompiler makes it for
  // this engine's tokenizer); it ends the sample with kStop when it reaches its end.
  std::shared_ptr<const CompiledGrammar> grammar;
  // Thinking models: at most this many tokens inside the reasoning section, then its close is
  // forced (engine/reasoning/reasoning_budget.h). Inactive by default.
  ReasoningBudget reasoning_budget;
  // Tenant isolation of the prefix cache and its tiers (vLLM's cache_salt): requests with
  // different salts never share KV blocks or restored pages. Empty: no salt.
  std::string cache_salt;
  // Disaggregated prefill/decode: keep the prompt's KV for a consumer, or pull it from a producer.
  KvTransferRequest kv_transfer;
  // Images in the prompt, in order (non-overlapping spans of the model's image token). Only for
  // an engine with a vision tower (Engine::image_encoder); no prompt logprobs, pooling or KV
  // transfer with them.
  std::vector<PromptImage> images;
  // Set: a pooling request (embeddings, rerank): params.max_tokens must be 0 and n 1; the one
  // final message carries StepOutput::embedding (finish kStop).
  std::optional<PoolingParams> pooling;
};

enum class FinishReason { kNone, kStop, kLength, kAbort, kTimeout, kError };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", "timeout", "error"

struct TopLogprob {
  int32_t token_id;
  float logprob;
};

struct TokenLogprob {
  int32_t token_id;
  float logprob;                // of the chosen token, after temperature/penalties (vLLM: raw)
  std::vector<TopLogprob> top;  // the N most likely, descending
  int32_t rank = 0;             // prompt logprobs: 1 + ids with a higher logit; 0 = not computed
};

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;  // summed over the n samples
  int32_t cached_prompt_tokens = 0;
  // Speculative decoding, summed over the samples: drafts verified, drafts accepted, and the
  // steps that verified drafts.
  int32_t draft_tokens = 0;
  int32_t accepted_draft_tokens = 0;
  int32_t verify_steps = 0;
};

// One message on a RequestStream: the tokens and text one sample produced since the last one.
struct StepOutput {
  uint64_t request_id = 0;
  int32_t index = 0;                   // which of the n samples
  std::vector<int32_t> token_ids;      // new tokens
  std::string text;                    // new text (complete UTF-8; stop strings held back)
  std::vector<TokenLogprob> logprobs;  // one per new token when requested
  // params.prompt_logprobs >= 0: prompt tokens 1.. (the first has none), raw log-softmax, on the
  // first message of sample 0 (its first token, or its only message when max_tokens is 0).
  std::vector<TokenLogprob> prompt_logprobs;
  FinishReason finish = FinishReason::kNone;  // set on the sample's last message
  std::string stop_reason;  // the matched stop string, or the stop token id as text
  Status error;             // set with FinishReason::kError
  Usage usage;              // filled on every message: the request's totals so far
  // A KvTransferRequest::produce request's last message: where its prompt's KV waits.
  std::optional<KvHandoff> kv_handoff;
  // A pooling request's last message: its vector (Pooler::pool).
  std::vector<float> embedding;
};

}  // namespace llmserve
