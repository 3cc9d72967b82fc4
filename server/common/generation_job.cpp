#include "server/common/generation_job.h"

#include <algorithm>

namespace llmserve {

Result<std::unique_ptr<GenerationJob>> GenerationJob::start(Engine& engine,
                                                            std::vector<GenerateRequest> requests) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  streams.reserve(requests.size());
  for (auto& r : requests) {
    auto stream = engine.submit(std::move(r));
    if (!stream.is_ok()) {
      for (auto& s : streams) {
        engine.abort(s->request_id());  // before the cancel, as in cancel()
        s->cancel();
      }
      return stream.status();
    }
    streams.push_back(std::move(stream).value());
  }
  return std::unique_ptr<GenerationJob>(new GenerationJob(engine, std::move(streams)));
}

GenerationJob::GenerationJob(Engine& engine, std::vector<std::shared_ptr<RequestStream>> streams)
    : engine_(engine), streams_(std::move(streams)), ended_(streams_.size(), false) {}

GenerationJob::~GenerationJob() {
  if (!finished()) cancel();
}

bool GenerationJob::finished() const {
  return std::all_of(ended_.begin(), ended_.end(), [](bool e) { return e; });
}

void GenerationJob::cancel() {
  if (cancelled_.exchange(true)) return;
  for (auto& s : streams_) {
    if (s->finished()) continue;
    // Abort before cancelling the stream: an engine may end the request as soon as it sees the
    // stream cancelled, and whoever then finds the engine idle must also find the abort
    // (grpc_server_test's ClientCancelAbortsTheRequest read aborted() == {} in that window).
    engine_.abort(s->request_id());
    s->cancel();
  }
}

void GenerationJob::abort() {
  for (auto& s : streams_) engine_.abort(s->request_id());
}

std::optional<GenerationJob::Event> GenerationJob::next(std::chrono::milliseconds timeout) {
  timed_out_ = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const size_t n = streams_.size();
  // One prompt: block on its stream. Several: poll round-robin, then wait briefly on one.
  while (true) {
    size_t live = 0;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (cursor_ + k) % n;
      if (ended_[i]) continue;
      ++live;
      const bool single = n == 1;
      auto wait = std::chrono::milliseconds(0);
      if (single) {
        wait = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (wait.count() < 0) wait = std::chrono::milliseconds(0);
      }
      auto out = streams_[i]->next(wait);
      if (out) {
        cursor_ = (i + 1) % n;
        return Event{i, std::move(*out)};
      }
      if (!streams_[i]->timed_out()) {
        ended_[i] = true;
        --live;
      }
    }
    if (live == 0) return std::nullopt;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      timed_out_ = true;
      return std::nullopt;
    }
    if (n > 1) {
      // Wait a little on the first live stream so an idle multi-prompt job does not spin.
      for (size_t i = 0; i < n; ++i) {
        if (ended_[i]) continue;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        auto out = streams_[i]->next(std::min(left, std::chrono::milliseconds(2)));
        if (out) {
          cursor_ = (i + 1) % n;
          return Event{i, std::move(*out)};
        }
        if (!streams_[i]->timed_out()) ended_[i] = true;
        break;
      }
    }
  }
}

}  // namespace llmserve
