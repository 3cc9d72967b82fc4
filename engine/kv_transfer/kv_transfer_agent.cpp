#include "engine/kv_transfer/kv_transfer_agent.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include <spdlog/spdlog.h>
#include <xxhash.h>

#include "engine/kv_transfer/ucx_transport.h"

namespace llmserve {

const char* kv_fallback_name(KvFallback f) {
  static constexpr const char* kNames[] = {"disabled",  "unsupported", "layout",   "prompt",
                                           "connect",   "transfer",    "timeout",  "lease",
                                           "cancelled", "auth",        "untrusted"};
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
    case KvPullError::kAuth:
      return KvFallback::kAuth;
    case KvPullError::kNone:
    case KvPullError::kTransfer:
      break;
  }
  return KvFallback::kTransfer;
}

namespace {

// "host" or "host:port" -> (host, port or 0).
std::pair<std::string, int32_t> split_peer(const std::string& peer) {
  const auto colon = peer.rfind(':');
  if (colon == std::string::npos) return {peer, 0};
  return {peer.substr(0, colon), std::atoi(peer.c_str() + colon + 1)};
}

}  // namespace

KvTransferAgent::KvTransferAgent(const KvTransferOptions& options, KvLayout layout,
                                 std::string engine_id, KvAuth auth, int64_t max_pinned_blocks)
    : options_(options),
      layout_(std::move(layout)),
      engine_id_(std::move(engine_id)),
      auth_(std::move(auth)),
      leases_(max_pinned_blocks) {}

Result<std::unique_ptr<KvTransferAgent>> KvTransferAgent::create(
    const KvTransferOptions& options, KvLayout layout, const std::optional<KvHostMemory>& memory,
    std::function<void()> wake) {
  if (!memory) {
    return failed_precondition(
        "kv_transfer.role " + options.role +
        " needs the KV cache in host memory (the CPU backend); this engine keeps it on the GPU");
  }
  LLMSERVE_ASSIGN_OR_RETURN(KvAuth auth, KvAuth::create(options.secret));
  uint64_t block_bytes = 0;
  for (const KvHostArray& arr : memory->arrays) block_bytes += arr.block_bytes;
  const auto num_blocks = static_cast<int64_t>(block_bytes > 0 ? memory->bytes / block_bytes : 0);
  const int64_t budget = options.max_pinned_blocks > 0 ? options.max_pinned_blocks
                                                       : std::max<int64_t>(1, num_blocks / 2);
  const std::string engine_id = kv_random_token().substr(0, 16);
  if (engine_id.empty()) return unavailable("kv transfer: the system's random generator failed");
  std::unique_ptr<KvTransferAgent> a(
      new KvTransferAgent(options, std::move(layout), engine_id, auth, budget));
  UcxTransportOptions t;
  t.listen = options.produces();
  t.listen_host = options.host;
  t.listen_port = options.port;
  t.net_devices = kv_interface_of(options.host);
  const std::string devices = t.net_devices.empty() ? "all" : t.net_devices;
  for (const std::string& p : options.peers) {
    auto [host, port] = split_peer(p);
    const std::string ip = kv_resolve_ipv4(host);
    if (ip.empty()) return invalid_argument("kv_transfer.peers: cannot resolve " + p);
    t.allowed_peers.push_back(ip);
    a->peers_.push_back({std::move(host), ip, port});
  }
  t.auth = std::move(auth);
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
  spdlog::info("kv transfer: {} on {}:{} (UCX devices: {}), pinned-block budget {}", options.role,
               options.host, a->transport_->port(), devices, budget);
  return a;
}

bool KvTransferAgent::has_pin_room(int32_t num_tokens) {
  const int64_t blocks = (static_cast<int64_t>(num_tokens) + layout_.block_size - 1) /
                         std::max<int32_t>(1, layout_.block_size);
  if (leases_.has_room(blocks)) return true;
  ++stats_.leases_refused;
  return false;
}

std::optional<KvHandoff> KvTransferAgent::make_lease(std::vector<int32_t> blocks,
                                                     int32_t num_tokens, uint64_t prompt_hash) {
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
  auto token = leases_.add({std::move(blocks), num_tokens, prompt_hash}, expiry);
  if (!token) {
    ++stats_.leases_refused;
    return std::nullopt;
  }
  h.lease_id = std::move(*token);
  h.signature = kv_hex(auth_.mac("llmserve-kv/2 handoff", {kv_handoff_signed_bytes(h)}));
  ++stats_.leases;
  return h;
}

bool KvTransferAgent::signed_by_us(const KvHandoff& h) const {
  if (h.signature.size() != 2 * kKvMacBytes) return false;
  const std::string want = kv_hex(auth_.mac("llmserve-kv/2 handoff", {kv_handoff_signed_bytes(h)}));
  return kv_equal_ct(h.signature, want);
}

bool KvTransferAgent::is_peer(const std::string& host, int32_t port) const {
  // No name lookup here (the engine thread): a handoff's host matches a peer by the name the
  // operator wrote or by the address that name resolved to at start-up.
  in_addr numeric{};
  char buf[INET_ADDRSTRLEN] = {};
  const bool is_ip = inet_pton(AF_INET, host.c_str(), &numeric) == 1 &&
                     inet_ntop(AF_INET, &numeric, buf, sizeof(buf)) != nullptr;
  for (const Peer& p : peers_) {
    if (p.port != 0 && p.port != port) continue;
    if (host == p.host || (is_ip && p.ip == buf)) return true;
  }
  return false;
}

std::optional<KvFallback> KvTransferAgent::check_handoff(const KvHandoff& h,
                                                         int32_t num_prompt_tokens,
                                                         uint64_t prompt_hash, int32_t n,
                                                         bool prompt_logprobs) {
  if (!consumes()) return KvFallback::kDisabled;
  // A handoff is a claim: only a producer of this deployment signs it, and no connection goes to
  // an address a client made up unless the operator configured it as a peer.
  const bool peer = is_peer(h.host, h.port);
  const bool trusted =
      signed_by_us(h) ? peers_.empty() || peer : options_.accept_client_params && peer;
  if (!trusted) return KvFallback::kUntrusted;
  std::optional<KvFallback> why;
  KvLayout mine = layout_;
  mine.array_block_bytes.clear();
  const auto blocks = static_cast<size_t>(
      (static_cast<int64_t>(num_prompt_tokens) + layout_.block_size - 1) / layout_.block_size);
  if (n > 1 || prompt_logprobs) {
    why = KvFallback::kUnsupported;
  } else if (!layout_mismatch(mine, h.layout).empty()) {
    why = KvFallback::kLayout;
  } else if (h.num_tokens != num_prompt_tokens || h.block_ids.size() != blocks ||
             h.prompt_hash != prompt_hash) {
    why = KvFallback::kPrompt;
  }
  // Tells the (trusted) producer to let its lease go now rather than at its expiry.
  if (why && !h.host.empty() && h.port > 0 && !h.lease_id.empty()) {
    transport_->reject(h.host, h.port, h.lease_id);
  }
  return why;
}

void KvTransferAgent::open(uint64_t request_id, const KvHandoff& handoff) {
  KvOpenJob job;
  job.id = request_id;
  job.host = handoff.host;
  job.port = handoff.port;
  job.lease_token = handoff.lease_id;
  job.deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options_.connect_timeout_seconds));
  transport_->open(std::move(job));
}

bool KvTransferAgent::attests(const KvLeaseInfo& lease, int32_t num_prompt_tokens,
                              uint64_t prompt_hash) const {
  const auto blocks = static_cast<uint32_t>(
      (static_cast<int64_t>(num_prompt_tokens) + layout_.block_size - 1) / layout_.block_size);
  return lease.num_tokens == num_prompt_tokens && lease.prompt_hash == prompt_hash &&
         lease.num_blocks == blocks;
}

void KvTransferAgent::start_pull(const RemoteKvStart& start) {
  KvReadJob job;
  job.id = start.request_id;
  job.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options_.pull_timeout_seconds));
  for (size_t i = static_cast<size_t>(start.num_cached_blocks); i < start.block_ids.size(); ++i) {
    const auto remote = static_cast<int32_t>(i);
    const int32_t local = start.block_ids[i];
    if (!job.runs.empty()) {
      KvBlockRun& last = job.runs.back();
      if (last.remote_first + last.count == remote && last.local_first + last.count == local) {
        ++last.count;
        continue;
      }
    }
    job.runs.push_back({remote, local, 1});
  }
  transport_->read(std::move(job));
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
