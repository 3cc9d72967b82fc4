// The engine side of disaggregated prefill/decode, driven by the step loop on the engine thread:
// a producer turns a finished prefill's pinned blocks into a lease (within its pinned-block
// budget) and a signed handoff; a consumer checks a handoff (signature or a configured peer,
// layout, prompt), opens the lease (holding no blocks while it waits), checks what the producer
// attests against its own prompt, reads the blocks its prefix cache lacks, and collects results;
// leases released or expired are unpinned here. Counters for the metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/kv_transfer/kv_auth.h"
#include "engine/kv_transfer/kv_handoff.h"
#include "engine/kv_transfer/kv_lease_table.h"
#include "engine/kv_transfer/kv_transfer_options.h"
#include "engine/kv_transfer/kv_transfer_stats.h"
#include "engine/kv_transfer/kv_transport.h"
#include "engine/model/ops.h"
#include "engine/scheduler/scheduler.h"

namespace llmserve {

// XXH3-64 of the prompt's token ids (int32 little-endian): ties a handoff to its prompt.
uint64_t kv_prompt_hash(std::span<const int32_t> tokens);

class KvTransferAgent {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts the UCX transport over the host KV cache (listening when a producer). `wake` is
  // called from the transport thread when a pull result waits or a consumer released a lease.
  // FAILED_PRECONDITION without a host cache (the CUDA backend) or without a valid secret,
  // UNAVAILABLE when UCX cannot start or listen.
  static Result<std::unique_ptr<KvTransferAgent>> create(const KvTransferOptions& options,
                                                         KvLayout layout,
                                                         const std::optional<KvHostMemory>& memory,
                                                         std::function<void()> wake);

  const KvTransferOptions& options() const { return options_; }
  bool produces() const { return options_.produces(); }
  bool consumes() const { return options_.consumes(); }
  const std::string& engine_id() const { return engine_id_; }
  int32_t port() const { return transport_->port(); }
  const KvLayout& layout() const { return layout_; }

  // Producer: whether a prompt of `num_tokens` fits the pinned-block budget now (counted as a
  // refused lease when not).
  bool has_pin_room(int32_t num_tokens);
  // Producer: a lease over blocks the scheduler kept pinned, and its signed handoff; nullopt
  // when the budget is spent (the caller unpins the blocks; the consumer prefills locally).
  std::optional<KvHandoff> make_lease(std::vector<int32_t> blocks, int32_t num_tokens,
                                      uint64_t prompt_hash);
  // Consumer: nullopt when the handoff may be pulled for this request (its prompt's token count
  // and kv_prompt_hash), else why not (a trusted
  // handoff's producer is then told to let its lease go; an untrusted one gets no connection).
  std::optional<KvFallback> check_handoff(const KvHandoff& h, int32_t num_prompt_tokens,
                                          uint64_t prompt_hash, int32_t n, bool prompt_logprobs);
  // Consumer: opens the handoff's lease for scheduler request `request_id` (a kOpened result, or
  // a kDone one with an error, follows).
  void open(uint64_t request_id, const KvHandoff& handoff);
  // Consumer: whether the producer's attested lease is this prompt's (tokens, hash, blocks).
  bool attests(const KvLeaseInfo& lease, int32_t num_prompt_tokens, uint64_t prompt_hash) const;
  // Reads the blocks `start` lacks (those after its prefix-cache hit) of its opened lease.
  void start_pull(const RemoteKvStart& start);
  void cancel(uint64_t request_id) { transport_->cancel(request_id); }
  std::vector<KvPullResult> take_results() { return transport_->take_results(); }
  void count_fallback(KvFallback f) { ++stats_.fallbacks[static_cast<size_t>(f)]; }
  void count_transfer(const KvPullResult& r);
  // Unpins the leases released by consumers or past their expiry.
  void sweep_leases(Scheduler& scheduler, Clock::time_point now);
  std::optional<Clock::time_point> next_expiry() const { return leases_.next_expiry(); }
  KvTransferStats stats() const;
  static KvFallback fallback_of(KvPullError e);

 private:
  KvTransferAgent(const KvTransferOptions& options, KvLayout layout, std::string engine_id,
                  KvAuth auth, int64_t max_pinned_blocks);
  bool signed_by_us(const KvHandoff& h) const;
  bool is_peer(const std::string& host, int32_t port) const;

  struct Peer {
    std::string host;  // as kv_transfer.peers names it
    std::string ip;    // what it resolved to at start-up
    int32_t port = 0;  // 0 = any
  };

  KvTransferOptions options_;
  KvLayout layout_;
  std::string engine_id_;
  KvAuth auth_;
  KvLeaseTable leases_;
  std::unique_ptr<KvTransport> transport_;
  KvTransferStats stats_;
  std::vector<Peer> peers_;
};

}  // namespace llmserve
