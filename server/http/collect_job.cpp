#include "server/http/collect_job.h"

#include "server/http/http_connection.h"

namespace llmserve {

Status collect_job(GenerationJob& job,
                   const std::optional<std::chrono::steady_clock::time_point>& deadline,
                   const std::function<void(const GenerationJob::Event&)>& on_event) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kPollInterval = std::chrono::milliseconds(50);
  const auto give_up = deadline ? *deadline + std::chrono::seconds(30) : Clock::time_point::max();
  auto next_check = Clock::now() + kPollInterval;
  while (true) {
    if (Clock::now() >= next_check) {
      // A client that went away gets nothing: stop its generation instead of running it out.
      if (http_client_disconnected()) {
        job.cancel();
        return {StatusCode::kCancelled, "the client went away"};
      }
      next_check = Clock::now() + kPollInterval;
    }
    if (auto ev = job.next(kPollInterval)) {
      on_event(*ev);
      continue;
    }
    if (!job.timed_out()) return Status::ok();
    if (Clock::now() > give_up) {
      job.cancel();
      return {StatusCode::kDeadlineExceeded, "request timed out"};
    }
  }
}

}  // namespace llmserve
