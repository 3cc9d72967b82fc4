// The consumer's side on the transport thread: one connection per producer (Hello, the reply's
// MAC checked), and each pull's steps on it: Open and the attested lease, the RMA reads of the
// lease's regions into local pages, Release and its ack.
#include <spdlog/spdlog.h>

#include "engine/kv_transfer/ucx_transport_impl.h"

namespace llmserve {
namespace {

constexpr auto kPeerIdle = std::chrono::seconds(30);
constexpr auto kStuckReads = std::chrono::seconds(2);  // past the deadline: the connection goes

}  // namespace

void ucx_on_get_done(void* request, ucs_status_t status, void* user_data) {
  auto* p = static_cast<UcxTransport::Impl::Pull*>(user_data);
  --p->outstanding;
  if (status != UCS_OK && p->error == KvPullError::kNone) {
    p->error = KvPullError::kTransfer;
    p->message = std::string("RMA read failed: ") + ucs_status_string(status);
  }
  ucp_request_free(request);
}

void ucx_on_peer_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* impl = static_cast<UcxTransport::Impl*>(arg);
  for (auto& [key, peer] : impl->peers) {
    if (peer->ep == ep) impl->on_peer_error(*peer, status);
  }
}

void UcxTransport::Impl::on_peer_error(Peer& peer, ucs_status_t status) {
  if (peer.state == Peer::State::kFailed) return;
  peer.error =
      peer.state == Peer::State::kConnecting ? KvPullError::kConnect : KvPullError::kTransfer;
  peer.message = std::string("connection to the producer failed: ") + ucs_status_string(status);
  peer.state = Peer::State::kFailed;
}

UcxTransport::Impl::Peer* UcxTransport::Impl::peer_for(const std::string& host, int32_t port) {
  const std::string key = host + ":" + std::to_string(port);
  auto it = peers.find(key);
  if (it != peers.end() && it->second->state != Peer::State::kFailed) return it->second.get();
  if (it != peers.end()) return nullptr;  // failed: goes once its pulls have ended
  auto peer = std::make_unique<Peer>();
  Peer& p = *peer;
  p.key = key;
  p.host = host;
  p.port = port;
  p.cookie = next_cookie++;
  p.nonce_c = kv_random_bytes(kKvNonceBytes);
  peers.emplace(key, std::move(peer));
  socklen_t len = 0;
  auto addr = resolve_ipv4(host, port, &len);
  if (!addr.is_ok() || p.nonce_c.empty()) {
    p.state = Peer::State::kFailed;
    p.error = KvPullError::kConnect;
    p.message = addr.is_ok() ? "no random nonce" : addr.status().message();
    return &p;
  }
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                  UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  ep.sockaddr.addr = reinterpret_cast<const sockaddr*>(&*addr);
  ep.sockaddr.addrlen = len;
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = ucx_on_peer_ep_error;
  ep.err_handler.arg = this;
  const ucs_status_t st = ucp_ep_create(worker, &ep, &p.ep);
  if (st != UCS_OK) {
    p.ep = nullptr;
    p.state = Peer::State::kFailed;
    p.error = KvPullError::kConnect;
    p.message = std::string("connect: ") + ucs_status_string(st);
    return &p;
  }
  if (!send(p.ep, KvHello{p.cookie, p.nonce_c, opt.layout}, {}, {})) {
    p.state = Peer::State::kFailed;
    p.error = KvPullError::kConnect;
    p.message = "cannot send to the producer";
  }
  return &p;
}

UcxTransport::Impl::Pull& UcxTransport::Impl::add_pull(uint64_t id, const std::string& host,
                                                       int32_t port, std::string lease_token,
                                                       UcxClock::time_point deadline,
                                                       bool reject_only) {
  auto pull = std::make_unique<Pull>();
  Pull& p = *pull;
  p.id = id;
  p.cookie = next_cookie++;
  p.reject_only = reject_only;
  p.lease_token = std::move(lease_token);
  p.deadline = deadline;
  p.peer_key = host + ":" + std::to_string(port);
  pulls.emplace(p.cookie, std::move(pull));
  Peer* peer = peer_for(host, port);
  if (peer == nullptr) fail(p, KvPullError::kConnect, "the connection to the producer failed");
  return p;
}

void UcxTransport::Impl::on_hello_reply(const KvHelloReply& r) {
  for (auto& [key, peer] : peers) {
    Peer& p = *peer;
    if (p.cookie != r.cookie || p.state != Peer::State::kConnecting) continue;
    if (r.nonce.size() != kKvNonceBytes || !verify(KvMessage(r), p.nonce_c, r.nonce)) {
      p.state = Peer::State::kFailed;
      p.error = KvPullError::kAuth;
      p.message = "the producer did not prove it holds kv_transfer.secret";
      spdlog::warn("kv transfer: {}: {}", key, p.message);
    } else if (!r.accepted) {
      p.state = Peer::State::kFailed;
      p.error = KvPullError::kLayout;
      p.message = "the producer refused: " + r.reason;
    } else {
      p.nonce_p = r.nonce;
      p.layout_error = r.reason;  // another layout: only Release goes over this connection
      p.state = Peer::State::kReady;
    }
    return;
  }
}

void UcxTransport::Impl::on_open_reply(const KvOpenReply& r) {
  auto it = pulls.find(r.cookie);
  if (it == pulls.end() || it->second->phase != Pull::Phase::kOpening) return;
  Pull& p = *it->second;
  auto peer = peers.find(p.peer_key);
  if (peer == peers.end() || !verify(KvMessage(r), peer->second->nonce_c, peer->second->nonce_p)) {
    return fail(p, KvPullError::kAuth, "the lease's description failed its MAC");
  }
  if (!r.accepted) return fail(p, KvPullError::kLease, "the producer refused: " + r.reason);
  for (const KvRegion& g : r.regions) {
    if (g.array >= opt.arrays.size() || g.count == 0 ||
        static_cast<uint64_t>(g.first) + g.count > r.num_blocks) {
      return fail(p, KvPullError::kTransfer, "the producer described a region outside its lease");
    }
  }
  p.lease = r;
  p.rkeys.assign(r.regions.size(), nullptr);
  p.phase = Pull::Phase::kOpened;
  KvPullResult res;
  res.id = p.id;
  res.stage = KvPullResult::Stage::kOpened;
  res.lease = {r.num_tokens, r.prompt_hash, r.num_blocks};
  post(std::move(res));
}

void UcxTransport::Impl::post(KvPullResult r) {
  {
    std::lock_guard<std::mutex> lock(mu);
    results.push_back(std::move(r));
  }
  if (opt.on_result) opt.on_result();
}

void UcxTransport::Impl::start_reads(Pull& p) {
  auto peer = peers.find(p.peer_key);
  if (peer == peers.end()) return fail(p, KvPullError::kTransfer, "the connection is gone");
  ucp_ep_h ep = peer->second->ep;
  auto* base = static_cast<uint8_t*>(opt.base);
  for (const KvBlockRun& run : p.runs) {
    if (run.count <= 0 || run.local_first < 0 || run.remote_first < 0 ||
        static_cast<uint64_t>(run.remote_first) + run.count > p.lease.num_blocks) {
      return fail(p, KvPullError::kTransfer, "a block run lies outside the lease");
    }
    for (uint32_t a = 0; a < opt.arrays.size(); ++a) {
      const uint64_t bb = opt.arrays[a].block_bytes;
      int32_t pos = run.remote_first;
      while (pos < run.remote_first + run.count) {
        size_t gi = p.lease.regions.size();
        for (size_t i = 0; i < p.lease.regions.size(); ++i) {
          const KvRegion& g = p.lease.regions[i];
          if (g.array == a && static_cast<uint32_t>(pos) >= g.first &&
              static_cast<uint32_t>(pos) < g.first + g.count) {
            gi = i;
            break;
          }
        }
        if (gi == p.lease.regions.size()) {
          return fail(p, KvPullError::kTransfer, "the lease describes no region for a block");
        }
        const KvRegion& g = p.lease.regions[gi];
        const int32_t n = std::min<int32_t>(run.remote_first + run.count,
                                            static_cast<int32_t>(g.first + g.count)) -
                          pos;
        const uint64_t len = bb * static_cast<uint64_t>(n);
        const uint64_t local = opt.arrays[a].offset +
                               bb * static_cast<uint64_t>(run.local_first + pos - run.remote_first);
        if (local + len > opt.bytes) {
          return fail(p, KvPullError::kTransfer, "a block run lies outside the cache");
        }
        if (p.rkeys[gi] == nullptr) {
          const ucs_status_t st = ucp_ep_rkey_unpack(ep, g.rkey.data(), &p.rkeys[gi]);
          if (st != UCS_OK) {
            p.rkeys[gi] = nullptr;
            return fail(p, KvPullError::kTransfer, std::string("rkey: ") + ucs_status_string(st));
          }
        }
        ucp_request_param_t rp{};
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        rp.cb.send = ucx_on_get_done;
        rp.user_data = &p;
        const uint64_t remote = g.addr + bb * static_cast<uint64_t>(pos - g.first);
        ucs_status_ptr_t req = ucp_get_nbx(ep, base + local, len, remote, p.rkeys[gi], &rp);
        if (UCS_PTR_IS_ERR(req)) {
          return fail(p, KvPullError::kTransfer,
                      std::string("RMA read: ") + ucs_status_string(UCS_PTR_STATUS(req)));
        }
        if (req != nullptr) ++p.outstanding;
        p.bytes += len;
        pos += n;
      }
    }
  }
}

void UcxTransport::Impl::on_release_ack(const KvReleaseAck& a) {
  auto it = pulls.find(a.cookie);
  if (it == pulls.end() || it->second->phase != Pull::Phase::kReleasing) return;
  Pull& p = *it->second;
  auto peer = peers.find(p.peer_key);
  if (peer == peers.end() || !verify(KvMessage(a), peer->second->nonce_c, peer->second->nonce_p)) {
    fail(p, KvPullError::kAuth, "the release's answer failed its MAC");
  } else if (!a.was_pinned && !p.reject_only) {
    fail(p, KvPullError::kLease, "the producer's lease had ended before the release");
  }
  p.phase = Pull::Phase::kDone;
}

void UcxTransport::Impl::fail(Pull& p, KvPullError e, std::string message) {
  if (p.error != KvPullError::kNone) return;
  p.error = e;
  p.message = std::move(message);
}

void UcxTransport::Impl::finish(Pull& p) {
  for (ucp_rkey_h k : p.rkeys) {
    if (k != nullptr) ucp_rkey_destroy(k);
  }
  p.rkeys.clear();
  if (p.reject_only) return;
  KvPullResult res;
  res.id = p.id;
  res.stage = KvPullResult::Stage::kDone;
  res.error = p.error;
  res.message = p.message;
  res.bytes = p.error == KvPullError::kNone ? p.bytes : 0;
  res.seconds = std::chrono::duration<double>(UcxClock::now() - p.start).count();
  post(std::move(res));
}

bool UcxTransport::Impl::advance(Pull& p) {
  const auto now = UcxClock::now();
  auto pit = peers.find(p.peer_key);
  Peer* peer = pit == peers.end() ? nullptr : pit->second.get();
  using Phase = Pull::Phase;
  const bool timed = p.phase != Phase::kOpened && p.phase != Phase::kDone;
  if (timed && now >= p.deadline) fail(p, KvPullError::kTimeout, "the pull timed out");
  if (p.cancel_requested) fail(p, KvPullError::kCancelled, "cancelled");
  if (peer == nullptr) {
    fail(p, KvPullError::kConnect, "no connection to the producer");
  } else if (peer->state == Peer::State::kFailed && p.phase != Phase::kDone) {
    fail(p, peer->error, peer->message);
  }
  if (p.error != KvPullError::kNone) {
    if (p.outstanding > 0) {
      // The reads write our pages: they end (or the connection is forced shut) before the
      // caller may reuse them.
      if (peer != nullptr && now >= p.deadline + kStuckReads && peer->ep != nullptr) {
        close_ep(peer->ep, true);
        peer->ep = nullptr;
        on_peer_error(*peer, UCS_ERR_TIMED_OUT);
      }
      return false;
    }
    const bool opened = p.phase == Phase::kOpened || p.phase == Phase::kReading;
    if (opened && !p.released && peer != nullptr && peer->state == Peer::State::kReady) {
      send(peer->ep, KvRelease{p.cookie, p.lease_token, false, {}}, peer->nonce_c, peer->nonce_p);
    }
    finish(p);
    return true;
  }
  if (peer != nullptr) peer->last_used = now;
  switch (p.phase) {
    case Phase::kWaitPeer:
      if (peer == nullptr || peer->state != Peer::State::kReady) return false;
      if (!p.reject_only && !peer->layout_error.empty()) {
        fail(p, KvPullError::kLayout, "the producer refused: " + peer->layout_error);
        return false;
      }
      if (p.reject_only) {
        p.released = send(peer->ep, KvRelease{p.cookie, p.lease_token, false, {}}, peer->nonce_c,
                          peer->nonce_p);
        p.phase = Phase::kReleasing;
      } else if (send(peer->ep, KvOpen{p.cookie, p.lease_token, {}}, peer->nonce_c,
                      peer->nonce_p)) {
        p.phase = Phase::kOpening;
      } else {
        fail(p, KvPullError::kConnect, "cannot send to the producer");
      }
      return false;
    case Phase::kOpened:
      if (!p.read_requested) return false;
      p.phase = Phase::kReading;
      p.start = now;  // the pull's time is its reads and release
      start_reads(p);
      return false;
    case Phase::kReading:
      if (p.outstanding > 0) return false;
      if (send(peer->ep, KvRelease{p.cookie, p.lease_token, true, {}}, peer->nonce_c,
               peer->nonce_p)) {
        p.released = true;
        p.phase = Phase::kReleasing;
      } else {
        fail(p, KvPullError::kTransfer, "cannot send the release");
      }
      return false;
    case Phase::kDone:
      finish(p);
      return true;
    case Phase::kOpening:
    case Phase::kReleasing:
      return false;
  }
  return false;
}

void UcxTransport::Impl::sweep_peers() {
  const auto now = UcxClock::now();
  for (auto it = peers.begin(); it != peers.end();) {
    Peer& peer = *it->second;
    bool used = false;
    for (const auto& [cookie, p] : pulls) used = used || p->peer_key == peer.key;
    const bool idle = peer.state == Peer::State::kReady && now - peer.last_used > kPeerIdle;
    const bool stale = peer.state == Peer::State::kConnecting && now - peer.last_used > kPeerIdle;
    if (!used && (peer.state == Peer::State::kFailed || idle || stale)) {
      close_ep(peer.ep, peer.state != Peer::State::kReady);
      it = peers.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace llmserve
