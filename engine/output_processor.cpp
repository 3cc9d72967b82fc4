#include "engine/output_processor.h"

#include <utility>

namespace llmserve {
namespace {

StepOutput new_output(const ActiveRequest& req, const SampleSlot& slot) {
  StepOutput out;
  out.request_id = req.id;
  out.index = slot.index;
  return out;
}

void mark_finished(ActiveRequest& req, SampleSlot& slot, FinishReason reason, StepOutput& out) {
  slot.finish = reason;
  out.finish = reason;
  ++req.num_finished;
}

}  // namespace

StepOutput token_output(ActiveRequest& req, SampleSlot& slot, int32_t token,
                        std::optional<TokenLogprob> logprob, FinishReason scheduler_finish) {
  StepOutput out = new_output(req, slot);
  slot.tokens.push_back(token);
  ++slot.num_generated;
  out.token_ids.push_back(token);
  if (logprob) out.logprobs.push_back(std::move(*logprob));
  OutputDelta delta = slot.stop.append(token);
  out.text = std::move(delta.text);
  if (delta.finished()) {
    out.stop_reason = std::move(delta.stop_reason);
    mark_finished(req, slot, delta.finish, out);
  } else if (scheduler_finish != FinishReason::kNone) {
    out.text += slot.stop.flush();
    mark_finished(req, slot, scheduler_finish, out);
  }
  out.usage = req.usage();
  return out;
}

StepOutput final_output(ActiveRequest& req, SampleSlot& slot, FinishReason reason, Status error) {
  StepOutput out = new_output(req, slot);
  out.text = slot.stop.flush();
  out.error = std::move(error);
  mark_finished(req, slot, reason, out);
  out.usage = req.usage();
  return out;
}

}  // namespace llmserve
