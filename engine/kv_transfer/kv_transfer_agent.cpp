#include "engine/kv_transfer/kv_transfer_agent.h"

#include <random>

#include <xxhash.h>

#include "engine/kv_transfer/ucx_transport.h"

namespace llmserve {

const char* kv_fallback_name(KvFallback f) {
  static constexpr const char* kNames[] = {"disabled", "unsupported", "layout",
                                           "prompt",   "connect",     "transfer",
                                           "timeout",  "lease",       "cancelled"};
  static_assert(std::size(kNames) == static_cast<size_t>(KvFallback::kCount));
  return kNames[static_cast<size_t>(f)];
}

uint64_t kv_prompt_hash(std::span<const int32_t> tokens) {
  std::vector<uint8_t> bytes(tokens.size() * 4);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto v = static_cast<uint32_t>(tokens[i]);
    for (size_t b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  return XXH3_64bits(bytes.data(), bytes.size());
}

KvFallback KvTransferAgent::fallback_of(KvPullError e) {
  switch (e) {
    case KvPullError::kConnect:
      return KvFallback::kConnect;
    case KvPullError::kLayout:
      return KvFallback::kLayout;
    case KvPullError::kTimeout:
      return KvFallback::kTimeout;
    case KvPullError::kLease:
      return KvFallback::kLease;
    case KvPullError::kCancelled:
      return KvFallback::kCancelled;
    case KvPullError::kNone:
    case KvPullError::kTransfer:
      break;
  }
  return KvFallback::kTransfer;
}

namespace {

std::string random_engine_id() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

KvTransferAgent::KvTransferAgent(const KvTransferOptions& options, KvLayout layout,
                                 std::string engine_id)
    : options_(options),
      layout_(std::move(layout)),
      engine_id_(std::move(engine_id)),
      leases_(engine_id_) {}

Result<std::unique_ptr<KvTransferAgent>> KvTransferAgent::create(
    const KvTransferOptions& options, KvLayout layout, const std::optional<KvHostMemory>& memory,
    std::function<void()> wake) {
  if (!memory) {
    return failed_precondition(
        "kv_transfer.role " + options.role +
        " needs the KV cache in host memory (the CPU backend); this engine keeps it on the GPU");
  }
  std::unique_ptr<KvTransferAgent> a(
      new KvTransferAgent(options, std::move(layout), random_engine_id()));
  UcxTransportOptions t;
  t.listen = options.produces();
  t.listen_host = options.host;
  t.listen_port = options.port;
  t.base = memory->base;
  t.bytes = memory->bytes;
  for (const KvHostArray& arr : memory->arrays) {
    t.arrays.push_back({arr.offset, arr.block_bytes});
    a->layout_.array_block_bytes.push_back(arr.block_bytes);
  }
  t.layout = a->layout_;
  t.leases = options.produces() ? &a->leases_ : nullptr;
  t.on_result = std::move(wake);
  LLMSERVE_ASSIGN_OR_RETURN(a->transport_, UcxTransport::create(std::move(t)));
  return a;
}

KvHandoff KvTransferAgent::make_lease(std::vector<int32_t> blocks, int32_t num_tokens,
                                      uint64_t prompt_hash) {
  KvHandoff h;
  h.engine_id = engine_id_;
  h.host = options_.advertise_host.empty() ? options_.host : options_.advertise_host;
  h.port = transport_->port();
  h.block_ids = blocks;
  h.num_tokens = num_tokens;
  h.prompt_hash = prompt_hash;
  h.layout = layout_;
  h.layout.array_block_bytes.clear();
  const auto expiry = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(options_.lease_seconds));
  h.lease_id = leases_.add(std::move(blocks), expiry);
  ++stats_.leases;
  return h;
}

std::optional<KvFallback> KvTransferAgent::check_handoff(const KvHandoff& h,
                                                         std::span<const int32_t> prompt, int32_t n,
                                                         bool prompt_logprobs) {
  std::optional<KvFallback> why;
  KvLayout mine = layout_;
  mine.array_block_bytes.clear();
  const auto blocks = static_cast<size_t>(
      (static_cast<int64_t>(prompt.size()) + layout_.block_size - 1) / layout_.block_size);
  if (!consumes()) {
    why = KvFallback::kDisabled;
  } else if (n > 1 || prompt_logprobs) {
    why = KvFallback::kUnsupported;
  } else if (!layout_mismatch(mine, h.layout).empty()) {
    why = KvFallback::kLayout;
  } else if (h.num_tokens != static_cast<int32_t>(prompt.size()) || h.block_ids.size() != blocks ||
             h.prompt_hash != kv_prompt_hash(prompt)) {
    why = KvFallback::kPrompt;
  }
  if (why) reject(h);
  return why;
}

void KvTransferAgent::reject(const KvHandoff& h) {
  if (!h.host.empty() && h.port > 0 && !h.lease_id.empty()) {
    transport_->reject(h.host, h.port, h.lease_id);
  }
}

void KvTransferAgent::start_pull(const RemoteKvStart& start, const KvHandoff& handoff) {
  KvPullJob job;
  job.id = start.request_id;
  job.host = handoff.host;
  job.port = handoff.port;
  job.lease_id = handoff.lease_id;
  job.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options_.pull_timeout_seconds));
  const size_t n = std::min(start.block_ids.size(), handoff.block_ids.size());
  for (size_t i = static_cast<size_t>(start.num_cached_blocks); i < n; ++i) {
    const int32_t remote = handoff.block_ids[i], local = start.block_ids[i];
    if (!job.runs.empty()) {
      KvBlockRun& last = job.runs.back();
      if (last.remote_first + last.count == remote && last.local_first + last.count == local) {
        ++last.count;
        continue;
      }
    }
    job.runs.push_back({remote, local, 1});
  }
  transport_->pull(std::move(job));
}

void KvTransferAgent::count_transfer(const KvPullResult& r) {
  ++stats_.transfers;
  stats_.bytes += r.bytes;
}

void KvTransferAgent::sweep_leases(Scheduler& scheduler, Clock::time_point now) {
  for (const KvLeaseTable::Ended& e : leases_.take_ended(now)) {
    scheduler.release_blocks(e.blocks);
    ++(e.expired ? stats_.leases_expired : stats_.leases_released);
  }
}

KvTransferStats KvTransferAgent::stats() const {
  KvTransferStats s = stats_;
  s.pinned_blocks = leases_.num_pinned_blocks();
  return s;
}

}  // namespace llmserve
