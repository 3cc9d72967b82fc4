// The producer's pinned prompts: each lease names the blocks a consumer may read until it says it
// has them (release, from the transport thread) or the lease expires (swept on the engine thread,
// which owns the blocks and unpins them). A lease released after it expired reports so: the
// consumer's copy may then be stale and it falls back to a local prefill.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace llmserve {

class KvLeaseTable {
 public:
  using Clock = std::chrono::steady_clock;

  struct Ended {
    std::vector<int32_t> blocks;
    bool expired = false;  // true: nobody released it in time
  };

  explicit KvLeaseTable(std::string prefix) : prefix_(std::move(prefix)) {}

  // Engine thread: a new lease over `blocks` (already pinned) until `expiry`; returns its id.
  std::string add(std::vector<int32_t> blocks, Clock::time_point expiry);
  // Any thread: ends the lease; true when it was still pinned (known, not expired or released).
  bool release(const std::string& lease_id);
  // Engine thread: removes the leases released, and those past their expiry at `now`; their
  // blocks are to be unpinned by the caller.
  std::vector<Ended> take_ended(Clock::time_point now);
  std::optional<Clock::time_point> next_expiry() const;
  int64_t num_leases() const;
  int64_t num_pinned_blocks() const;

 private:
  struct Lease {
    std::vector<int32_t> blocks;
    Clock::time_point expiry;
    bool released = false;
  };
  const std::string prefix_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Lease> leases_;
  uint64_t next_ = 1;
  int64_t pinned_blocks_ = 0;
};

}  // namespace llmserve
