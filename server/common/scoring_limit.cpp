#include "server/common/scoring_limit.h"

#include <algorithm>
#include <string>

#include "server/common/field_checks.h"

namespace llmserve {

namespace {

int64_t prompt_tokens(const GenerationRequest& req) {
  int64_t tokens = 0;
  for (const auto& ids : req.prompt_token_ids) tokens += static_cast<int64_t>(ids.size());
  return tokens;
}

}  // namespace

int64_t prompt_logprob_entries(const GenerationRequest& req) {
  if (req.params.prompt_logprobs < 0) return 0;
  return static_cast<int64_t>(std::max(req.params.n, 1)) * prompt_tokens(req) *
         (static_cast<int64_t>(req.params.prompt_logprobs) + 1);
}

Status check_prompt_scoring(const RequestLimits& limits, const GenerationRequest& req) {
  const int64_t entries = prompt_logprob_entries(req);
  if (entries <= limits.max_prompt_logprob_entries) return Status::ok();
  const bool asked = req.prompt_logprobs.has_value();
  const std::string top = asked ? "prompt_logprobs" : "logprobs";
  return field_error(
      asked ? "prompt_logprobs" : "logprobs",
      "scoring the prompt would return n (" + std::to_string(std::max(req.params.n, 1)) +
          ") x prompt tokens (" + std::to_string(prompt_tokens(req)) + ") x (" + top + " + 1) (" +
          std::to_string(req.params.prompt_logprobs + 1) + ") = " + std::to_string(entries) +
          " logprob entries, over this server's limit of " +
          std::to_string(limits.max_prompt_logprob_entries) +
          " (server.max_prompt_logprob_entries); ask for a smaller n, fewer " + top +
          " or a shorter prompt");
}

}  // namespace llmserve
