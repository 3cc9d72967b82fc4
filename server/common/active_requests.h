// Requests in flight by their client-visible id, so DELETE /v1/requests/{id} (or any transport)
// can cancel a job another thread is streaming. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "server/common/generation_job.h"

namespace llmserve {

class ActiveRequests {
 public:
  // Registers `job` under `id` until the returned guard is destroyed. A duplicate id keeps
  // the first registration (the later one simply is not cancellable by id).
  class Registration {
   public:
    Registration(ActiveRequests* owner, std::string id) : owner_(owner), id_(std::move(id)) {}
    ~Registration();
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    ActiveRequests* owner_;
    std::string id_;
  };

  std::unique_ptr<Registration> add(const std::string& id, GenerationJob* job);
  // True when a job with that id was found; it is aborted (its reader sees "abort").
  bool cancel(const std::string& id);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, GenerationJob*> jobs_;
};

}  // namespace llmserve
