#include "server/common/active_requests.h"

namespace llmserve {

ActiveRequests::Registration::~Registration() {
  if (owner_ == nullptr) return;
  std::lock_guard lock(owner_->mu_);
  owner_->jobs_.erase(id_);
}

void ActiveRequests::Registration::attach(GenerationJob* job) {
  if (owner_ == nullptr) return;
  std::lock_guard lock(owner_->mu_);
  auto it = owner_->jobs_.find(id_);
  if (it == owner_->jobs_.end()) return;
  it->second.job = job;
  if (it->second.cancelled && job != nullptr) job->abort();
}

Result<std::unique_ptr<ActiveRequests::Registration>> ActiveRequests::reserve(
    const std::string& id, const std::string& field) {
  std::lock_guard lock(mu_);
  if (!jobs_.emplace(id, Entry{}).second) {
    return already_exists(field + ": the request id '" + id +
                          "' is in use by a request in flight; use a unique id per request");
  }
  return std::make_unique<Registration>(this, id);
}

bool ActiveRequests::cancel(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return false;
  it->second.cancelled = true;
  if (it->second.job != nullptr) it->second.job->abort();
  return true;
}

size_t ActiveRequests::size() const {
  std::lock_guard lock(mu_);
  return jobs_.size();
}

}  // namespace llmserve
