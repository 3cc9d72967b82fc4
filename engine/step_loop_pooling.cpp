// The step loop's part of pooling (engine/pooling): a pooling request ran its whole prompt in one
// step (Request::pool), the graph handed back every row's hidden state, and its one message
// carries the pooled vector.
#include <string>

#include "engine/output_processor.h"
#include "engine/step_loop.h"

namespace llmserve {

StepOutput StepLoop::pooled_output(ActiveRequest& req, SampleSlot& slot, size_t entry,
                                   const ScheduledRequest& s) {
  const int32_t first = builder_.pool_index(entry);
  const int64_t H = runner_->config().hidden_size;
  const int64_t n = s.num_new_tokens;
  const std::span<const float> hidden = runner_->pooled_hidden();
  if (pooler_ == nullptr || !req.pooling || first < 0 || s.num_computed_tokens != 0 ||
      n != req.num_prompt_tokens ||
      static_cast<int64_t>(hidden.size()) < (int64_t{first} + n) * H) {
    return final_output(req, slot, FinishReason::kError,
                        internal_error("pooling: the step did not return the prompt's " +
                                       std::to_string(req.num_prompt_tokens) + " rows"));
  }
  std::vector<float> v =
      pooler_->pool(hidden.subspan(static_cast<size_t>(first * H), static_cast<size_t>(n * H)), n,
                    req.pooling->dimensions);
  StepOutput out = final_output(req, slot, FinishReason::kStop);
  out.embedding = std::move(v);
  ++pooled_requests_;
  return out;
}

}  // namespace llmserve
