// The transport-neutral generation request: what the HTTP JSON readers (server/http) and the
// gRPC proto reader (server/grpc) fill, validated once here. Errors are INVALID_ARGUMENT
// "<field>: message" (OUT_OF_RANGE for the context length); transports map them to their shape.
//
// A reader fills the fields as asked (no range checks beyond representing the value), then calls
// validate_generation_request, then (after any chat rendering) prepare_prompts.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/generate_request.h"
#include "engine/grammar/grammar_spec.h"
#include "engine/sampling_params.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/common/reasoning_parser.h"
#include "server/common/request_limits.h"
#include "server/common/tool_calls.h"

namespace llmserve {

// One image part of a request: where it is ("messages[1].content[0]", the `param` of its
// errors) and its URL: a base64 data: URL, or an http(s) URL (fetched only when its host is in
// server.allowed_media_domains). server/common/request_images.h reads it.
struct ImageInput {
  std::string where;
  std::string url;
};

struct GenerationRequest {
  std::string model;  // "" = the served model
  // Text prompts (tokenized by prepare_prompts), or token-id prompts; readers set one of them.
  // After prepare_prompts, prompt_token_ids holds every prompt's ids.
  std::vector<std::string> prompt_texts;
  std::vector<std::vector<int32_t>> prompt_token_ids;
  // Readers set everything but params.logprobs / params.prompt_logprobs, which validation derives
  // from `logprobs`, `prompt_logprobs` and `echo`.
  SamplingParams params;
  bool max_tokens_given = false;                // params.max_tokens came from the request
  std::string max_tokens_field = "max_tokens";  // its name there (max_completion_tokens on chat)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int32_t priority = 0;        // lower is served first
  std::optional<double> timeout_seconds;
  std::string user;
  // vLLM's cache_salt: a tenant's salt mixed into every prefix-cache hash, so requests of
  // different salts never share KV pages (pool or tiers). "" = none.
  std::string cache_salt;
  std::optional<int32_t> logprobs;         // top-N per generated token
  std::optional<int32_t> prompt_logprobs;  // top-N per prompt token, as asked
  bool echo = false;                       // the prompt comes back before the completion
  std::vector<std::string> echo_texts;     // with echo, after prepare_prompts: each prompt's text
  std::optional<GrammarSpec> grammar;      // structured output the text must match
  ToolRequest tools;  // chat: the tools offered; when active(), `grammar` is their reply format
  // chat: where the reply starts for the reasoning parser (kOff: no reasoning parsing).
  ReasoningStart reasoning = ReasoningStart::kOff;
  // Tokens the reply may spend inside its reasoning section before the close is forced
  // (thinking_token_budget; -1 = no budget). Applies when `reasoning` is not kOff.
  int32_t reasoning_budget = -1;
  // Disaggregated prefill/decode (kv_transfer_params): keep this prefill for a consumer, or pull
  // its KV from a producer. Applies to a single prompt only.
  KvTransferRequest kv_transfer;
  // chat: the image parts, in prompt order (their placeholders are expanded in the prompt).
  std::vector<ImageInput> images;
};

// How prepare_prompts encodes text prompts and defaults max_tokens.
enum class PromptStyle {
  kCompletion,  // tokenizer defaults; max_tokens defaults to limits.default_completion_max_tokens
  kChat,        // a rendered chat: special tokens parsed, none added; max_tokens = the room left
};

// The error for a max_tokens (or `field`, its other name) below what is allowed: >= 1, or 0 to
// score the prompt only (prompt_logprobs, echo). One message for every transport.
Status max_tokens_error(std::string_view field, int64_t value);

// Ranges, limits and cross-field rules (model name, sampling ranges, stop / logit_bias / token-id
// limits, n and echo, prompts x n, max_tokens 0 only when scoring the prompt, grammar sizes).
// Clamps top_k to the vocabulary and derives params.logprobs / params.prompt_logprobs.
Status validate_generation_request(const RequestLimits& limits, GenerationRequest* req);

// Tokenizes text prompts, fills echo_texts, rejects empty prompts and fits the longest prompt in
// the context (fit_context). Tokenizing stops once a prompt passes the tokens that can fit
// (context_exceeded with a lower bound): its cost is bounded by the context, not the text.
// Call after validate_generation_request.
Status prepare_prompts(const Tokenizer& tokenizer, const RequestLimits& limits, PromptStyle style,
                       GenerationRequest* req);

// A prompt of `prompt_tokens` tokens: fills params.max_tokens when not given (`default_max`, or
// the room left when `default_max` <= 0); OUT_OF_RANGE (OpenAI's context_length_exceeded, the
// message "prompt: ..." or "messages: ..." by `style`, naming both numbers) when it does not fit.
Status fit_context(int64_t prompt_tokens, const RequestLimits& limits, int32_t default_max,
                   GenerationRequest* req, PromptStyle style);

// The OUT_OF_RANGE of fit_context for a prompt of `prompt_tokens` tokens; lower_bound: the prompt
// has at least that many (the message says "more than" prompt_tokens - 1).
Status context_exceeded(int64_t prompt_tokens, bool lower_bound, const RequestLimits& limits,
                        const GenerationRequest& req, PromptStyle style);

// Token ids must lie in [0, vocab_size).
Status check_token_ids(const std::vector<int32_t>& ids, int32_t vocab_size, const char* field);

// One engine GenerateRequest per prompt, sharing params, priority and deadline. The grammar is
// not part of it: callers read req.grammar.
std::vector<GenerateRequest> make_generate_requests(
    const GenerationRequest& req, std::vector<std::vector<int32_t>> prompts,
    const std::string& external_id, std::optional<std::chrono::steady_clock::time_point> deadline);

}  // namespace llmserve
