// `llmserve generate --prompts-file FILE.jsonl`: every line is one request (a JSON object with
// "prompt" (text), "prompt_token_ids" or "messages" (chat, rendered with the model's template),
// plus its own sampling fields: max_tokens, temperature, top_p, top_k, min_p, seed, stop,
// stop_token_ids, n, logprobs, ignore_eos, min_tokens and the penalties). All lines run through
// one engine concurrently; one JSON object per line is printed, in input order:
// {"index", "text", "token_ids", "finish_reason", "stop_reason", "usage": {"prompt_tokens",
// "completion_tokens", "cached_prompt_tokens"}, "ttft_ms", "e2e_ms"} (+ "samples" when n > 1,
// "logprobs" when asked, "spec": {"draft_tokens", "accepted_tokens", "verify_steps"} when drafts
// were checked), or {"index", "error"} for a line that failed.
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/engine.h"

namespace llmserve::cli {

// One parsed line turned into an engine request (chat messages rendered, text tokenized).
Result<GenerateRequest> request_from_json_line(const nlohmann::json& line, const Engine& engine);

// Reads JSONL from `in`, runs every request on `engine` (all at once, or one after the other
// when sequential), writes JSONL to `out`. Returns the exit code: 0 when every line produced a
// result, 1 when some line failed.
int run_prompts_file(Engine& engine, std::istream& in, std::ostream& out, bool sequential = false);

// "speculative: C checks, D drafts, A accepted (acceptance rate A/D, mean accepted length A/C)",
// or "" when nothing was drafted.
std::string spec_stats_line(const EngineStats& stats);

// Creates the engine from `options` and runs the file at `path` ("-" = stdin) to stdout; prints
// spec_stats_line to stderr when there is one.
int run_generate_prompts_file(const EngineOptions& options, const std::string& path,
                              bool sequential = false);

}  // namespace llmserve::cli
