// The producer's pinned prompts: each lease names the blocks a consumer may read, under an
// unguessable 128-bit token, until the consumer says it has them (release, from the transport
// thread) or the lease expires (swept on the engine thread, which owns the blocks and unpins
// them). A lease also records what its blocks hold (the prompt's token count and hash), which the
// producer attests to the consumer. A lease released after it expired reports so: the
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

  struct Lease {
    std::vector<int32_t> blocks;  // the producer's block ids, in prompt order
    int32_t num_tokens = 0;       // prompt tokens whose K/V the blocks hold
    uint64_t prompt_hash = 0;     // kv_prompt_hash of those tokens
  };
  struct Ended {
    std::vector<int32_t> blocks;
    bool expired = false;  // true: nobody released it in time
  };

  // max_pinned_blocks: add() refuses a lease that would pin more blocks in all (0 = no cap).
  explicit KvLeaseTable(int64_t max_pinned_blocks = 0) : max_pinned_blocks_(max_pinned_blocks) {}

  // Engine thread: a new lease over `lease.blocks` (already pinned) until `expiry`; returns its
  // token (32 hex digits), or nullopt when the pinned-block budget has no room for it (or the
  // CSPRNG failed): the caller then unpins the blocks and answers no handoff.
  std::optional<std::string> add(Lease lease, Clock::time_point expiry);
  // Any thread: the lease behind `token` while it is live (not released, not past its expiry).
  std::optional<Lease> find(const std::string& token, Clock::time_point now) const;
  // Any thread: ends the lease; true when it was still pinned (known, not expired or released).
  bool release(const std::string& token);
  // Engine thread: removes the leases released, and those past their expiry at `now`; their
  // blocks are to be unpinned by the caller.
  std::vector<Ended> take_ended(Clock::time_point now);
  std::optional<Clock::time_point> next_expiry() const;
  int64_t num_leases() const;
  int64_t num_pinned_blocks() const;
  // Whether `n` more blocks fit the budget now.
  bool has_room(int64_t n) const;

 private:
  struct Entry {
    Lease lease;
    Clock::time_point expiry;
    bool released = false;
  };
  const int64_t max_pinned_blocks_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> leases_;
  int64_t pinned_blocks_ = 0;
};

}  // namespace llmserve
