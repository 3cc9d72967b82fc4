// One pull's steps on the transport thread: connect and Hello, the RMA reads of each block run
// and array, Release and its ack, the endpoint's close; and the producer's answers to Hello and
// Release.
#include <spdlog/spdlog.h>

#include "engine/kv_transfer/ucx_transport_impl.h"

namespace llmserve {

void ucx_on_send_done(void* request, ucs_status_t, void* user_data) {
  delete static_cast<std::string*>(user_data);
  ucp_request_free(request);
}

void ucx_on_get_done(void* request, ucs_status_t status, void* user_data) {
  auto* p = static_cast<UcxTransport::Impl::Pull*>(user_data);
  --p->outstanding;
  if (status != UCS_OK && p->error == KvPullError::kNone) {
    p->error = KvPullError::kTransfer;
    p->message = std::string("RMA read failed: ") + ucs_status_string(status);
  }
  ucp_request_free(request);
}

void ucx_on_client_ep_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* p = static_cast<UcxTransport::Impl::Pull*>(arg);
  if (p->error == KvPullError::kNone) {
    p->error = p->phase == UcxTransport::Impl::Pull::Phase::kHello ? KvPullError::kConnect
                                                                   : KvPullError::kTransfer;
    p->message = std::string("connection to the producer failed: ") + ucs_status_string(status);
  }
}

bool UcxTransport::Impl::send(ucp_ep_h ep, const KvMessage& m) {
  auto* buf = new std::string(encode_kv_message(m));
  ucp_request_param_t p{};
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
  p.cb.send = ucx_on_send_done;
  p.user_data = buf;
  ucs_status_ptr_t r = ucp_am_send_nbx(ep, kUcxAmId, nullptr, 0, buf->data(), buf->size(), &p);
  if (r == nullptr || UCS_PTR_IS_ERR(r)) delete buf;
  return !UCS_PTR_IS_ERR(r);
}

void UcxTransport::Impl::fail(Pull& p, KvPullError e, std::string message) {
  if (p.error != KvPullError::kNone) return;
  p.error = e;
  p.message = std::move(message);
}

void UcxTransport::Impl::start_pull(std::unique_ptr<Pull> p) {
  Pull& pull = *p;
  pull.impl = this;
  pull.cookie = next_cookie++;
  pulls.emplace(pull.cookie, std::move(p));
  socklen_t len = 0;
  auto addr = resolve_ipv4(pull.job.host, pull.job.port, &len);
  if (!addr.is_ok()) return fail(pull, KvPullError::kConnect, addr.status().message());
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                  UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  ep.sockaddr.addr = reinterpret_cast<const sockaddr*>(&*addr);
  ep.sockaddr.addrlen = len;
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = ucx_on_client_ep_error;
  ep.err_handler.arg = &pull;
  ucs_status_t st = ucp_ep_create(worker, &ep, &pull.ep);
  if (st != UCS_OK) {
    pull.ep = nullptr;
    return fail(pull, KvPullError::kConnect, std::string("connect: ") + ucs_status_string(st));
  }
  const bool sent = pull.reject_only
                        ? send(pull.ep, KvRelease{pull.cookie, pull.job.lease_id, false})
                        : send(pull.ep, KvHello{pull.cookie, opt.layout});
  if (!sent) return fail(pull, KvPullError::kConnect, "cannot send to the producer");
  pull.phase = pull.reject_only ? Pull::Phase::kReleasing : Pull::Phase::kHello;
}

void UcxTransport::Impl::on_hello_reply(Pull& p, const KvHelloReply& r) {
  if (p.phase != Pull::Phase::kHello || p.error != KvPullError::kNone) return;
  if (!r.accepted) return fail(p, KvPullError::kLayout, "the producer refused: " + r.reason);
  if (r.arrays.size() != opt.arrays.size()) {
    return fail(p, KvPullError::kLayout, "the producer's cache has another number of arrays");
  }
  for (size_t i = 0; i < r.arrays.size(); ++i) {
    if (r.arrays[i].block_bytes != opt.arrays[i].block_bytes) {
      return fail(p, KvPullError::kLayout, "array " + std::to_string(i) + " block bytes differ");
    }
  }
  ucs_status_t st = ucp_ep_rkey_unpack(p.ep, r.rkey.data(), &p.rkey);
  if (st != UCS_OK) {
    p.rkey = nullptr;
    return fail(p, KvPullError::kTransfer, std::string("rkey: ") + ucs_status_string(st));
  }
  auto* base = static_cast<uint8_t*>(opt.base);
  for (const KvBlockRun& run : p.job.runs) {
    for (size_t i = 0; i < opt.arrays.size(); ++i) {
      const uint64_t bb = opt.arrays[i].block_bytes;
      const uint64_t len = bb * static_cast<uint64_t>(run.count);
      const uint64_t local = opt.arrays[i].offset + bb * static_cast<uint64_t>(run.local_first);
      if (run.count <= 0 || run.local_first < 0 || run.remote_first < 0 ||
          local + len > opt.bytes) {
        return fail(p, KvPullError::kTransfer, "a block run lies outside the cache");
      }
      ucp_request_param_t rp{};
      rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
      rp.cb.send = ucx_on_get_done;
      rp.user_data = &p;
      const uint64_t remote =
          r.base + r.arrays[i].offset + bb * static_cast<uint64_t>(run.remote_first);
      ucs_status_ptr_t req = ucp_get_nbx(p.ep, base + local, len, remote, p.rkey, &rp);
      if (UCS_PTR_IS_ERR(req)) {
        return fail(p, KvPullError::kTransfer,
                    std::string("RMA read: ") + ucs_status_string(UCS_PTR_STATUS(req)));
      }
      if (req != nullptr) ++p.outstanding;
      p.bytes += len;
    }
  }
  p.phase = Pull::Phase::kReading;
}

void UcxTransport::Impl::on_message(const Inbound& in) {
  auto decoded = decode_kv_message(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(in.bytes.data()), in.bytes.size()));
  if (!decoded.is_ok()) {
    spdlog::warn("kv transfer: dropped a message: {}", decoded.status().message());
    return;
  }
  KvMessage& m = *decoded;
  if (auto* hello = std::get_if<KvHello>(&m)) {
    if (in.reply_ep == nullptr) return;
    KvHelloReply r;
    r.cookie = hello->cookie;
    const std::string mismatch = layout_mismatch(opt.layout, hello->layout);
    if (!opt.listen || opt.leases == nullptr) {
      r.reason = "this daemon is not a KV producer";
    } else if (!mismatch.empty()) {
      r.reason = "KV layouts differ: " + mismatch;
    } else {
      r.accepted = true;
      r.base = reinterpret_cast<uint64_t>(opt.base);
      r.arrays = opt.arrays;
      r.rkey = packed_rkey;
    }
    send(in.reply_ep, r);
  } else if (auto* rel = std::get_if<KvRelease>(&m)) {
    if (in.reply_ep == nullptr) return;
    const bool pinned = opt.leases != nullptr && opt.leases->release(rel->lease_id);
    send(in.reply_ep, KvReleaseAck{rel->cookie, pinned});
    if (pinned && opt.on_result) opt.on_result();  // the engine unpins the blocks now
  } else if (auto* reply = std::get_if<KvHelloReply>(&m)) {
    auto it = pulls.find(reply->cookie);
    if (it != pulls.end()) on_hello_reply(*it->second, *reply);
  } else if (auto* ack = std::get_if<KvReleaseAck>(&m)) {
    auto it = pulls.find(ack->cookie);
    if (it == pulls.end() || it->second->phase != Pull::Phase::kReleasing) return;
    Pull& p = *it->second;
    if (!ack->was_pinned && !p.reject_only) {
      fail(p, KvPullError::kLease, "the producer's lease had ended before the release");
    }
    close_pull(p);
  }
}

void UcxTransport::Impl::close_pull(Pull& p) {
  p.phase = Pull::Phase::kClosing;
  if (p.ep == nullptr) return;
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  // A failed pull may still have reads in flight: force them to end before the caller reuses
  // the blocks they write.
  rp.flags = p.error != KvPullError::kNone ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t r = ucp_ep_close_nbx(p.ep, &rp);
  p.ep = nullptr;
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) p.close_req = r;
}

bool UcxTransport::Impl::advance(Pull& p) {
  const bool late = UcxClock::now() >= p.job.deadline;
  if (p.phase != Pull::Phase::kClosing) {
    if (late) fail(p, KvPullError::kTimeout, "the pull timed out");
    if (p.phase == Pull::Phase::kReading && p.outstanding == 0 && p.error == KvPullError::kNone) {
      if (send(p.ep, KvRelease{p.cookie, p.job.lease_id, true})) {
        p.phase = Pull::Phase::kReleasing;
      } else {
        fail(p, KvPullError::kTransfer, "cannot send the release");
      }
    }
    if (p.error != KvPullError::kNone) close_pull(p);
    if (p.phase != Pull::Phase::kClosing) return false;
  }
  if (p.close_req != nullptr) {
    if (ucp_request_check_status(p.close_req) == UCS_INPROGRESS) return false;
    ucp_request_free(p.close_req);
    p.close_req = nullptr;
  }
  if (p.outstanding > 0) return false;
  if (p.rkey != nullptr) {
    ucp_rkey_destroy(p.rkey);
    p.rkey = nullptr;
  }
  if (p.reject_only) return true;
  KvPullResult res;
  res.id = p.job.id;
  res.error = p.error;
  res.message = p.message;
  res.bytes = p.error == KvPullError::kNone ? p.bytes : 0;
  res.seconds = std::chrono::duration<double>(UcxClock::now() - p.start).count();
  {
    std::lock_guard<std::mutex> lock(mu);
    results.push_back(std::move(res));
  }
  if (opt.on_result) opt.on_result();
  return true;
}

}  // namespace llmserve
