#include "server/common/active_requests.h"

namespace llmserve {

ActiveRequests::Registration::~Registration() {
  if (owner_ == nullptr) return;
  std::lock_guard lock(owner_->mu_);
  owner_->jobs_.erase(id_);
}

std::unique_ptr<ActiveRequests::Registration> ActiveRequests::add(const std::string& id,
                                                                  GenerationJob* job) {
  std::lock_guard lock(mu_);
  if (!jobs_.emplace(id, job).second) return std::make_unique<Registration>(nullptr, id);
  return std::make_unique<Registration>(this, id);
}

bool ActiveRequests::cancel(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return false;
  it->second->abort();
  return true;
}

size_t ActiveRequests::size() const {
  std::lock_guard lock(mu_);
  return jobs_.size();
}

}  // namespace llmserve
