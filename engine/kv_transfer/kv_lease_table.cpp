#include "engine/kv_transfer/kv_lease_table.h"

namespace llmserve {

std::string KvLeaseTable::add(std::vector<int32_t> blocks, Clock::time_point expiry) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string id = prefix_ + "-" + std::to_string(next_++);
  pinned_blocks_ += static_cast<int64_t>(blocks.size());
  leases_.emplace(id, Lease{std::move(blocks), expiry, false});
  return id;
}

bool KvLeaseTable::release(const std::string& lease_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(lease_id);
  if (it == leases_.end() || it->second.released) return false;
  it->second.released = true;
  return true;
}

std::vector<KvLeaseTable::Ended> KvLeaseTable::take_ended(Clock::time_point now) {
  std::vector<Ended> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = leases_.begin(); it != leases_.end();) {
    Lease& l = it->second;
    if (!l.released && l.expiry > now) {
      ++it;
      continue;
    }
    pinned_blocks_ -= static_cast<int64_t>(l.blocks.size());
    out.push_back({std::move(l.blocks), !l.released});
    it = leases_.erase(it);
  }
  return out;
}

std::optional<KvLeaseTable::Clock::time_point> KvLeaseTable::next_expiry() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<Clock::time_point> next;
  for (const auto& [id, l] : leases_) {
    if (!next || l.expiry < *next) next = l.expiry;
  }
  return next;
}

int64_t KvLeaseTable::num_leases() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(leases_.size());
}

int64_t KvLeaseTable::num_pinned_blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pinned_blocks_;
}

}  // namespace llmserve
