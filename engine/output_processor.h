// Turns a sample's sampled tokens (or an outside end: abort, timeout, error) into the
// StepOutputs its stream carries: text delta from the stop checker's detokenizer, token ids,
// logprobs, the finish reason and the request's usage so far. Engine thread only.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/active_request.h"
#include "engine/core/status.h"
#include "engine/generate_request.h"

namespace llmserve {

// Appends `token` to the sample. The sample finishes when the stop checker says so (EOS, stop
// token or string, max tokens) or, failing that, with `scheduler_finish` when the scheduler
// ended it (length). Sets slot.finish and counts req.num_finished when it ends.
StepOutput token_output(ActiveRequest& req, SampleSlot& slot, int32_t token,
                        std::optional<TokenLogprob> logprob,
                        FinishReason scheduler_finish = FinishReason::kNone);

// The last message of a sample ended without a new token: the held-back text, `reason`, and
// `error` (with kError). Precondition: !slot.finished().
StepOutput final_output(ActiveRequest& req, SampleSlot& slot, FinishReason reason,
                        Status error = Status::ok());

}  // namespace llmserve
