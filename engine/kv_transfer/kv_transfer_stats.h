// Counters of disaggregated prefill/decode for the metrics.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace llmserve {

// Why a consumer prefilled locally instead of pulling: refused before the pull, or the pull
// failed (KvPullError). Indexes KvTransferStats::fallbacks.
enum class KvFallback {
  kDisabled,     // this daemon is not a consumer
  kUnsupported,  // n > 1 or prompt logprobs: recomputed here
  kLayout,       // the handoff's layout differs from ours (or the producer refused ours)
  kPrompt,       // the handoff is for another prompt
  kConnect,
  kTransfer,
  kTimeout,
  kLease,      // the producer's lease had ended
  kCancelled,  // the request ended first
  kAuth,       // the producer failed to prove it holds the deployment's secret
  kUntrusted,  // the handoff carries no valid signature and names no configured peer
  kCount
};
const char* kv_fallback_name(KvFallback f);

struct KvTransferStats {
  uint64_t transfers = 0;  // pulls that gave the blocks
  uint64_t bytes = 0;
  std::array<uint64_t, static_cast<size_t>(KvFallback::kCount)> fallbacks{};
  uint64_t leases = 0, leases_released = 0, leases_expired = 0;
  uint64_t leases_refused = 0;  // producer: prefills answered without a handoff (budget spent)
  int64_t pinned_blocks = 0;    // producer: blocks held for consumers now
};

}  // namespace llmserve
