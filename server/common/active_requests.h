// Requests in flight by their client-visible id, so DELETE /v1/requests/{id} (or any transport)
// can cancel a job another thread is streaming. An id names one live request at a time: a
// second request with the id of a live one is refused (ALREADY_EXISTS), so a cancel by id never
// leaves a twin running. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/core/status.h"
#include "server/common/generation_job.h"

namespace llmserve {

class ActiveRequests {
 public:
  // Holds an id until destroyed. Destroy it before the job it was attached to.
  class Registration {
   public:
    Registration(ActiveRequests* owner, std::string id) : owner_(owner), id_(std::move(id)) {}
    ~Registration();
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    // The id's job, once started; a cancel that came before aborts it here.
    void attach(GenerationJob* job);

   private:
    ActiveRequests* owner_;
    std::string id_;
  };

  // Holds `id` for a request about to start (before its job is submitted, so a duplicate never
  // reaches the engine). ALREADY_EXISTS "<field>: ..." while a live request holds it.
  Result<std::unique_ptr<Registration>> reserve(const std::string& id, const std::string& field);
  // True when a request with that id is live; its job is aborted (its reader sees "abort"), or
  // will be as soon as it is attached.
  bool cancel(const std::string& id);
  size_t size() const;

 private:
  struct Entry {
    GenerationJob* job = nullptr;  // null until attach()
    bool cancelled = false;
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> jobs_;
};

}  // namespace llmserve
