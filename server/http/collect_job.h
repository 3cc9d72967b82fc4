// A non-streamed generation, waited for on the handler's thread: every output of the job goes to
// on_event as it comes; the client is polled every 50 ms and its job cancelled when it left.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "engine/core/status.h"
#include "server/common/generation_job.h"

namespace llmserve {

// OK once every stream of the job ended; kCancelled when the client went away (nobody to
// answer); kDeadlineExceeded 30 s past the request's deadline (the job is cancelled).
Status collect_job(GenerationJob& job,
                   const std::optional<std::chrono::steady_clock::time_point>& deadline,
                   const std::function<void(const GenerationJob::Event&)>& on_event);

}  // namespace llmserve
