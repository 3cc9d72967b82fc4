// One client request as the engine sees it: one engine request per prompt (a completion with a
// list of prompts is several), their streams merged into one sequence of events. Used by both
// transports. Destroying an unfinished job cancels it (stream cancel + Engine::abort).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/core/status.h"
#include "engine/engine.h"

namespace llmserve {

class GenerationJob {
 public:
  struct Event {
    size_t prompt_index = 0;
    StepOutput output;
  };

  // Submits every request; when one fails, the ones already submitted are aborted and the
  // submit error is returned.
  static Result<std::unique_ptr<GenerationJob>> start(Engine& engine,
                                                      std::vector<GenerateRequest> requests);
  ~GenerationJob();
  GenerationJob(const GenerationJob&) = delete;
  GenerationJob& operator=(const GenerationJob&) = delete;

  // The next output of any prompt. nullopt when every stream has ended, or when `timeout`
  // passed first (then timed_out() is true).
  std::optional<Event> next(std::chrono::milliseconds timeout);
  bool timed_out() const { return timed_out_; }
  bool finished() const;
  // The reader is gone: thread-safe, idempotent; cancels the streams and aborts every engine
  // request that has not ended.
  void cancel();
  // Asks the engine to stop (e.g. DELETE /v1/requests/{id}); thread-safe. The reader keeps
  // reading and sees each sample's final "abort" message.
  void abort();
  bool cancelled() const { return cancelled_.load(); }
  size_t num_prompts() const { return streams_.size(); }

 private:
  GenerationJob(Engine& engine, std::vector<std::shared_ptr<RequestStream>> streams);

  Engine& engine_;
  std::vector<std::shared_ptr<RequestStream>> streams_;
  std::vector<bool> ended_;
  size_t cursor_ = 0;
  bool timed_out_ = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace llmserve
