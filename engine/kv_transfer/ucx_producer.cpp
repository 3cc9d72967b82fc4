// The producer's side on the transport thread: connections accepted (from allowed addresses),
// Hello answered with a MAC'd nonce, Open answered for a live lease only, with its attested
// contents and a remote key per region of exactly its blocks (registered on the first Open,
// unregistered when the lease ends), Release ending the lease. A peer whose MAC fails is cut off.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "engine/kv_transfer/ucx_transport_impl.h"

namespace llmserve {
namespace {

constexpr auto kLeaseSweepEvery = std::chrono::milliseconds(500);

void on_server_ep_error(void* arg, ucp_ep_h ep, ucs_status_t) {
  static_cast<UcxTransport::Impl*>(arg)->failed_server_eps.push_back(ep);
}

std::string client_ip(ucp_conn_request_h req) {
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  if (ucp_conn_request_query(req, &attr) != UCS_OK) return {};
  if (attr.client_address.ss_family != AF_INET) return {};
  char buf[INET_ADDRSTRLEN] = {};
  const auto* in = reinterpret_cast<const sockaddr_in*>(&attr.client_address);
  if (inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf)) == nullptr) return {};
  return buf;
}

}  // namespace

void UcxTransport::Impl::accept(ucp_conn_request_h req) {
  if (!opt.allowed_peers.empty()) {
    const std::string ip = client_ip(req);
    if (std::find(opt.allowed_peers.begin(), opt.allowed_peers.end(), ip) ==
        opt.allowed_peers.end()) {
      spdlog::warn("kv transfer: refused a connection from {} (not in kv_transfer.peers)",
                   ip.empty() ? "an unknown address" : ip);
      ucp_listener_reject(listener, req);
      return;
    }
  }
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.conn_request = req;
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = on_server_ep_error;
  ep.err_handler.arg = this;
  ucp_ep_h h = nullptr;
  if (ucp_ep_create(worker, &ep, &h) == UCS_OK) {
    conns.emplace(h, Conn{});
    ++accepted;
  }
}

void UcxTransport::Impl::on_hello(ucp_ep_h ep, const KvHello& h) {
  auto it = conns.find(ep);
  if (it == conns.end() || h.nonce.size() != kKvNonceBytes) return;
  Conn& c = it->second;
  c.nonce_c = h.nonce;
  c.nonce_p = kv_random_bytes(kKvNonceBytes);
  KvHelloReply r;
  r.cookie = h.cookie;
  r.nonce = c.nonce_p;
  const std::string mismatch = layout_mismatch(opt.layout, h.layout);
  if (!opt.listen || opt.leases == nullptr) {
    r.reason = "this daemon is not a KV producer";
  } else if (c.nonce_p.empty()) {
    r.reason = "no random nonce";
  } else {
    // Another layout still gets an authenticated connection: its consumer may release a lease
    // it refused, though no Open on it succeeds.
    r.accepted = true;
    if (!mismatch.empty()) r.reason = "KV layouts differ: " + mismatch;
  }
  c.greeted = r.accepted;
  c.layout_ok = r.accepted && mismatch.empty();
  send(ep, r, c.nonce_c, c.nonce_p);
}

void UcxTransport::Impl::on_open(ucp_ep_h ep, const KvOpen& o) {
  auto it = conns.find(ep);
  if (it == conns.end() || !it->second.greeted) return;
  Conn& c = it->second;
  if (!verify(KvMessage(o), c.nonce_c, c.nonce_p)) {
    spdlog::warn(
        "kv transfer: an Open failed its MAC (a peer without kv_transfer.secret); "
        "closing its connection");
    conns.erase(it);
    close_ep(ep, true);
    return;
  }
  KvOpenReply r;
  std::string why;
  const auto lease = c.layout_ok ? opt.leases->find(o.lease_token, UcxClock::now()) : std::nullopt;
  const LeaseMap* m = lease ? map_lease(o.lease_token, *lease, &why) : nullptr;
  if (m != nullptr) {
    r = m->reply;
  } else if (!c.layout_ok) {
    r.reason = "KV layouts differ";
  } else {
    r.reason = lease ? why : "no such lease (unknown, released or expired)";
  }
  r.cookie = o.cookie;
  send(ep, std::move(r), c.nonce_c, c.nonce_p);
}

void UcxTransport::Impl::on_release(ucp_ep_h ep, const KvRelease& rel) {
  auto it = conns.find(ep);
  if (it == conns.end() || !it->second.greeted) return;
  Conn& c = it->second;
  if (!verify(KvMessage(rel), c.nonce_c, c.nonce_p)) {
    spdlog::warn("kv transfer: a Release failed its MAC; closing its connection");
    conns.erase(it);
    close_ep(ep, true);
    return;
  }
  const bool pinned = opt.leases != nullptr && opt.leases->release(rel.lease_token);
  unmap_lease(rel.lease_token);
  send(ep, KvReleaseAck{rel.cookie, pinned, {}}, c.nonce_c, c.nonce_p);
  if (pinned && opt.on_result) opt.on_result();  // the engine unpins the blocks now
}

const UcxTransport::Impl::LeaseMap* UcxTransport::Impl::map_lease(const std::string& token,
                                                                  const KvLeaseTable::Lease& lease,
                                                                  std::string* why) {
  if (auto it = lease_maps.find(token); it != lease_maps.end()) return &it->second;
  LeaseMap m;
  m.reply.accepted = true;
  m.reply.num_tokens = lease.num_tokens;
  m.reply.prompt_hash = lease.prompt_hash;
  m.reply.num_blocks = static_cast<uint32_t>(lease.blocks.size());
  auto unmap_all = [this, &m] {
    for (ucp_mem_h h : m.memhs) ucp_mem_unmap(context, h);
  };
  auto* base = static_cast<uint8_t*>(opt.base);
  size_t first = 0;
  while (first < lease.blocks.size()) {
    size_t end = first + 1;
    while (end < lease.blocks.size() && lease.blocks[end] == lease.blocks[end - 1] + 1) ++end;
    const int64_t block = lease.blocks[first];
    const auto count = static_cast<uint64_t>(end - first);
    for (uint32_t a = 0; a < opt.arrays.size(); ++a) {
      const uint64_t bb = opt.arrays[a].block_bytes;
      const uint64_t offset = opt.arrays[a].offset + bb * static_cast<uint64_t>(block);
      if (block < 0 || offset + bb * count > opt.bytes) {
        unmap_all();
        *why = "the lease names a block outside the cache";
        return nullptr;
      }
      ucp_mem_map_params_t mp{};
      mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
      mp.address = base + offset;
      mp.length = bb * count;
      ucp_mem_h memh = nullptr;
      ucs_status_t st = ucp_mem_map(context, &mp, &memh);
      if (st != UCS_OK) {
        unmap_all();
        *why = std::string("mem_map: ") + ucs_status_string(st);
        return nullptr;
      }
      m.memhs.push_back(memh);
      void* key = nullptr;
      size_t key_size = 0;
      if ((st = ucp_rkey_pack(context, memh, &key, &key_size)) != UCS_OK) {
        unmap_all();
        *why = std::string("rkey_pack: ") + ucs_status_string(st);
        return nullptr;
      }
      KvRegion g;
      g.first = static_cast<uint32_t>(first);
      g.count = static_cast<uint32_t>(count);
      g.array = a;
      g.addr = reinterpret_cast<uint64_t>(base + offset);
      g.rkey.assign(static_cast<const char*>(key), key_size);
      ucp_rkey_buffer_release(key);
      m.reply.regions.push_back(std::move(g));
    }
    first = end;
  }
  return &lease_maps.emplace(token, std::move(m)).first->second;
}

void UcxTransport::Impl::unmap_lease(const std::string& token) {
  auto it = lease_maps.find(token);
  if (it == lease_maps.end()) return;
  for (ucp_mem_h h : it->second.memhs) ucp_mem_unmap(context, h);
  lease_maps.erase(it);
}

void UcxTransport::Impl::sweep_lease_maps() {
  const auto now = UcxClock::now();
  if (lease_maps.empty() || now < next_lease_sweep || opt.leases == nullptr) return;
  next_lease_sweep = now + kLeaseSweepEvery;
  std::vector<std::string> dead;
  for (const auto& [token, m] : lease_maps) {
    if (!opt.leases->find(token, now)) dead.push_back(token);
  }
  for (const std::string& t : dead) unmap_lease(t);
}

}  // namespace llmserve
