#include "engine/kv_transfer/kv_lease_table.h"

#include "engine/kv_transfer/kv_auth.h"

namespace llmserve {

std::optional<std::string> KvLeaseTable::add(Lease lease, Clock::time_point expiry) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto n = static_cast<int64_t>(lease.blocks.size());
  if (max_pinned_blocks_ > 0 && pinned_blocks_ + n > max_pinned_blocks_) return std::nullopt;
  std::string token = kv_random_token();
  if (token.empty() || leases_.count(token) != 0) return std::nullopt;
  pinned_blocks_ += n;
  leases_.emplace(token, Entry{std::move(lease), expiry, false});
  return token;
}

std::optional<KvLeaseTable::Lease> KvLeaseTable::find(const std::string& token,
                                                      Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(token);
  if (it == leases_.end() || it->second.released || it->second.expiry <= now) return std::nullopt;
  return it->second.lease;
}

bool KvLeaseTable::release(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(token);
  if (it == leases_.end() || it->second.released) return false;
  it->second.released = true;
  return true;
}

std::vector<KvLeaseTable::Ended> KvLeaseTable::take_ended(Clock::time_point now) {
  std::vector<Ended> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = leases_.begin(); it != leases_.end();) {
    Entry& e = it->second;
    if (!e.released && e.expiry > now) {
      ++it;
      continue;
    }
    pinned_blocks_ -= static_cast<int64_t>(e.lease.blocks.size());
    out.push_back({std::move(e.lease.blocks), !e.released});
    it = leases_.erase(it);
  }
  return out;
}

std::optional<KvLeaseTable::Clock::time_point> KvLeaseTable::next_expiry() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<Clock::time_point> next;
  for (const auto& [token, e] : leases_) {
    if (!next || e.expiry < *next) next = e.expiry;
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

bool KvLeaseTable::has_room(int64_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_pinned_blocks_ <= 0 || pinned_blocks_ + n <= max_pinned_blocks_;
}

}  // namespace llmserve
