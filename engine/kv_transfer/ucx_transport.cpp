#include "engine/kv_transfer/ucx_transport.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "engine/kv_transfer/ucx_transport_impl.h"

namespace llmserve {

Status ucx_error(const std::string& what, ucs_status_t st) {
  return unavailable("ucx: " + what + ": " + ucs_status_string(st));
}

Result<sockaddr_storage> resolve_ipv4(const std::string& host, int32_t port, socklen_t* len) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    return unavailable("ucx: cannot resolve " + host + ": " + gai_strerror(rc));
  }
  sockaddr_storage out{};
  std::memcpy(&out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return out;
}

namespace {

constexpr auto kRejectTimeout = std::chrono::seconds(2);
constexpr auto kShutdownGrace = std::chrono::seconds(2);

void on_server_ep_error(void* arg, ucp_ep_h ep, ucs_status_t) {
  static_cast<UcxTransport::Impl*>(arg)->failed_server_eps.push_back(ep);
}

void on_conn_request(ucp_conn_request_h req, void* arg) {
  static_cast<UcxTransport::Impl*>(arg)->conn_requests.push_back(req);
}

ucs_status_t on_am(void* arg, const void*, size_t, void* data, size_t length,
                   const ucp_am_recv_param_t* param) {
  // Control messages are sent eager; a rendezvous one is not ours and is dropped.
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0) return UCS_OK;
  auto* impl = static_cast<UcxTransport::Impl*>(arg);
  UcxTransport::Impl::Inbound in;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0) in.reply_ep = param->reply_ep;
  in.bytes.assign(static_cast<const char*>(data), length);
  impl->inbox.push_back(std::move(in));
  return UCS_OK;
}

}  // namespace

Status UcxTransport::Impl::init() {
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  ucs_status_t st = ucp_init(&params, nullptr, &context);
  if (st != UCS_OK) return ucx_error("init", st);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  if ((st = ucp_worker_create(context, &wp, &worker)) != UCS_OK) {
    return ucx_error("worker", st);
  }
  if ((st = ucp_worker_get_efd(worker, &worker_fd)) != UCS_OK) return ucx_error("efd", st);
  wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) return unavailable("ucx transport: eventfd failed");

  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  am.id = kUcxAmId;
  am.cb = on_am;
  am.arg = this;
  if ((st = ucp_worker_set_am_recv_handler(worker, &am)) != UCS_OK) {
    return ucx_error("active-message handler", st);
  }
  if (opt.base != nullptr && opt.bytes > 0) {
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = opt.base;
    mp.length = opt.bytes;
    if ((st = ucp_mem_map(context, &mp, &memh)) != UCS_OK) return ucx_error("mem_map", st);
    void* key = nullptr;
    size_t key_size = 0;
    if ((st = ucp_rkey_pack(context, memh, &key, &key_size)) != UCS_OK) {
      return ucx_error("rkey_pack", st);
    }
    packed_rkey.assign(static_cast<const char*>(key), key_size);
    ucp_rkey_buffer_release(key);
  }
  if (!opt.listen) return Status::ok();
  socklen_t len = 0;
  LLMSERVE_ASSIGN_OR_RETURN(sockaddr_storage addr,
                            resolve_ipv4(opt.listen_host, opt.listen_port, &len));
  ucp_listener_params_t lp{};
  lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  lp.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  lp.sockaddr.addrlen = len;
  lp.conn_handler.cb = on_conn_request;
  lp.conn_handler.arg = this;
  if ((st = ucp_listener_create(worker, &lp, &listener)) != UCS_OK) {
    return ucx_error("listen on " + opt.listen_host + ":" + std::to_string(opt.listen_port), st);
  }
  return Status::ok();
}

UcxTransport::Impl::~Impl() {
  for (void* r : closing) ucp_request_free(r);
  if (listener != nullptr) ucp_listener_destroy(listener);
  if (memh != nullptr) ucp_mem_unmap(context, memh);
  if (worker != nullptr) ucp_worker_destroy(worker);
  if (context != nullptr) ucp_cleanup(context);
  if (wake_fd >= 0) ::close(wake_fd);
}

bool UcxTransport::Impl::tick() {
  bool busy = false;
  while (ucp_worker_progress(worker) != 0) busy = true;
  std::vector<KvPullJob> jobs;
  std::vector<uint64_t> cancel_ids;
  std::vector<Reject> rej;
  {
    std::lock_guard<std::mutex> lock(mu);
    jobs.swap(new_jobs);
    cancel_ids.swap(cancels);
    rej.swap(rejects);
  }
  for (KvPullJob& j : jobs) {
    auto p = std::make_unique<Pull>();
    p->job = std::move(j);
    start_pull(std::move(p));
    busy = true;
  }
  for (Reject& r : rej) {
    auto p = std::make_unique<Pull>();
    p->reject_only = true;
    p->job.host = std::move(r.host);
    p->job.port = r.port;
    p->job.lease_id = std::move(r.lease_id);
    p->job.deadline = UcxClock::now() + kRejectTimeout;
    start_pull(std::move(p));
    busy = true;
  }
  for (uint64_t id : cancel_ids) {
    for (auto& [cookie, p] : pulls) {
      if (!p->reject_only && p->job.id == id) fail(*p, KvPullError::kCancelled, "cancelled");
    }
  }
  for (ucp_conn_request_h req : conn_requests) {
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.conn_request = req;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = on_server_ep_error;
    ep.err_handler.arg = this;
    ucp_ep_h h = nullptr;
    if (ucp_ep_create(worker, &ep, &h) == UCS_OK) server_eps.push_back(h);
    busy = true;
  }
  conn_requests.clear();
  std::vector<Inbound> msgs;
  msgs.swap(inbox);
  for (const Inbound& in : msgs) on_message(in);
  busy = busy || !msgs.empty();
  for (ucp_ep_h ep : failed_server_eps) {
    auto it = std::find(server_eps.begin(), server_eps.end(), ep);
    if (it == server_eps.end()) continue;
    server_eps.erase(it);
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &rp);
    if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
  }
  failed_server_eps.clear();
  for (auto it = closing.begin(); it != closing.end();) {
    if (ucp_request_check_status(*it) == UCS_INPROGRESS) {
      ++it;
      continue;
    }
    ucp_request_free(*it);
    it = closing.erase(it);
  }
  for (auto it = pulls.begin(); it != pulls.end();) {
    if (advance(*it->second)) {
      it = pulls.erase(it);
      busy = true;
    } else {
      ++it;
    }
  }
  return busy;
}

Result<std::unique_ptr<UcxTransport>> UcxTransport::create(UcxTransportOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->opt = std::move(options);
  LLMSERVE_RETURN_IF_ERROR(impl->init());
  int32_t port = 0;
  if (impl->listener != nullptr) {
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    const ucs_status_t st = ucp_listener_query(impl->listener, &attr);
    if (st != UCS_OK) return ucx_error("listener query", st);
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&attr.sockaddr)->sin_port);
  }
  std::unique_ptr<UcxTransport> t(new UcxTransport(std::move(impl)));
  t->port_ = port;
  t->thread_ = std::thread([raw = t.get()] { raw->run(); });
  return t;
}

UcxTransport::UcxTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

UcxTransport::~UcxTransport() {
  impl_->stop = true;
  impl_->wake();
  if (thread_.joinable()) thread_.join();
}

void UcxTransport::run() {
  Impl& im = *impl_;
  while (!im.stop.load()) {
    if (im.tick()) continue;
    if (ucp_worker_arm(im.worker) == UCS_ERR_BUSY) continue;
    pollfd fds[2] = {{im.worker_fd, POLLIN, 0}, {im.wake_fd, POLLIN, 0}};
    ::poll(fds, 2, im.pulls.empty() ? 200 : 5);
    uint64_t drained = 0;
    ssize_t n = ::read(im.wake_fd, &drained, sizeof(drained));
    (void)n;
  }
  // Shutdown: end every pull (their reads must finish before the cache memory goes), then close.
  for (auto& [cookie, p] : im.pulls) im.fail(*p, KvPullError::kCancelled, "shutting down");
  const auto until = UcxClock::now() + kShutdownGrace;
  while (!im.pulls.empty() && UcxClock::now() < until) im.tick();
  for (ucp_ep_h ep : im.server_eps) im.failed_server_eps.push_back(ep);
  im.tick();
  while (!im.closing.empty() && UcxClock::now() < until) im.tick();
}

void UcxTransport::pull(KvPullJob job) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->new_jobs.push_back(std::move(job));
  }
  impl_->wake();
}

void UcxTransport::cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->cancels.push_back(id);
  }
  impl_->wake();
}

void UcxTransport::reject(std::string host, int32_t port, std::string lease_id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->rejects.push_back({std::move(host), port, std::move(lease_id)});
  }
  impl_->wake();
}

std::vector<KvPullResult> UcxTransport::take_results() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<KvPullResult> out;
  out.swap(impl_->results);
  return out;
}

}  // namespace llmserve
