#include "engine/kv_transfer/ucx_transport.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

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

std::string kv_resolve_ipv4(const std::string& host) {
  socklen_t len = 0;
  auto addr = resolve_ipv4(host, 0, &len);
  if (!addr.is_ok()) return {};
  char buf[INET_ADDRSTRLEN] = {};
  const auto* in = reinterpret_cast<const sockaddr_in*>(&*addr);
  return inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf)) != nullptr ? buf : "";
}

std::string kv_interface_of(const std::string& host) {
  socklen_t len = 0;
  auto addr = resolve_ipv4(host, 0, &len);
  if (!addr.is_ok()) return {};
  const in_addr want = reinterpret_cast<const sockaddr_in*>(&*addr)->sin_addr;
  if (want.s_addr == htonl(INADDR_ANY)) return {};
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  std::string name;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == want.s_addr) {
      name = i->ifa_name;
      break;
    }
  }
  freeifaddrs(list);
  return name;
}

namespace {

constexpr auto kRejectTimeout = std::chrono::seconds(2);
constexpr auto kShutdownGrace = std::chrono::seconds(2);

void on_conn_request(ucp_conn_request_h req, void* arg) {
  static_cast<UcxTransport::Impl*>(arg)->conn_requests.push_back(req);
}

ucs_status_t on_am(void* arg, const void*, size_t, void* data, size_t length,
                   const ucp_am_recv_param_t* param) {
  // Control messages are sent eager; a rendezvous one is not ours and is dropped.
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0) return UCS_OK;
  if (length > (size_t{1} << 26)) return UCS_OK;  // far past any message of ours
  auto* impl = static_cast<UcxTransport::Impl*>(arg);
  UcxTransport::Impl::Inbound in;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0) in.reply_ep = param->reply_ep;
  in.bytes.assign(static_cast<const char*>(data), length);
  impl->inbox.push_back(std::move(in));
  return UCS_OK;
}

}  // namespace

Status UcxTransport::Impl::init() {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucx_error("config", st);
  if (!opt.net_devices.empty() && std::getenv("UCX_NET_DEVICES") == nullptr) {
    st = ucp_config_modify(config, "NET_DEVICES", opt.net_devices.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return ucx_error("NET_DEVICES=" + opt.net_devices, st);
    }
  }
  // A producer restarted right after its connections closed binds its port again at once (the
  // closed connections sit in TIME_WAIT on it).
  if (std::getenv("UCX_CM_REUSEADDR") == nullptr &&
      std::getenv("UCX_TCP_CM_REUSEADDR") == nullptr) {
    st = ucp_config_modify(config, "CM_REUSEADDR", "y");
    if (st != UCS_OK) {
      ucp_config_release(config);
      return ucx_error("CM_REUSEADDR", st);
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  st = ucp_init(&params, config, &context);
  ucp_config_release(config);
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
  for (auto& [token, m] : lease_maps) {
    for (ucp_mem_h h : m.memhs) ucp_mem_unmap(context, h);
  }
  if (listener != nullptr) ucp_listener_destroy(listener);
  if (worker != nullptr) ucp_worker_destroy(worker);
  if (context != nullptr) ucp_cleanup(context);
  if (wake_fd >= 0) ::close(wake_fd);
}

void ucx_on_send_done(void* request, ucs_status_t, void* user_data) {
  delete static_cast<std::string*>(user_data);
  ucp_request_free(request);
}

bool UcxTransport::Impl::send(ucp_ep_h ep, KvMessage m, const std::string& nonce_c,
                              const std::string& nonce_p) {
  if (ep == nullptr) return false;
  if (!std::holds_alternative<KvHello>(m)) {
    set_kv_message_mac(m, opt.auth.mac(kKvMacLabel, {nonce_c, nonce_p, kv_message_mac_input(m)}));
  }
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

bool UcxTransport::Impl::verify(const KvMessage& m, const std::string& nonce_c,
                                const std::string& nonce_p) const {
  return opt.auth.verify(kv_message_mac(m), kKvMacLabel,
                         {nonce_c, nonce_p, kv_message_mac_input(m)});
}

void UcxTransport::Impl::on_message(const Inbound& in) {
  auto decoded = decode_kv_message(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(in.bytes.data()), in.bytes.size()));
  if (!decoded.is_ok()) {
    spdlog::warn("kv transfer: dropped a message: {}", decoded.status().message());
    return;
  }
  const KvMessage& m = *decoded;
  if (const auto* hello = std::get_if<KvHello>(&m)) {
    on_hello(in.reply_ep, *hello);
  } else if (const auto* open = std::get_if<KvOpen>(&m)) {
    on_open(in.reply_ep, *open);
  } else if (const auto* rel = std::get_if<KvRelease>(&m)) {
    on_release(in.reply_ep, *rel);
  } else if (const auto* reply = std::get_if<KvHelloReply>(&m)) {
    on_hello_reply(*reply);
  } else if (const auto* oreply = std::get_if<KvOpenReply>(&m)) {
    on_open_reply(*oreply);
  } else if (const auto* ack = std::get_if<KvReleaseAck>(&m)) {
    on_release_ack(*ack);
  }
}

void UcxTransport::Impl::close_ep(ucp_ep_h ep, bool force) {
  if (ep == nullptr) return;
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  rp.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &rp);
  if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
}

bool UcxTransport::Impl::tick() {
  bool busy = false;
  while (ucp_worker_progress(worker) != 0) busy = true;
  std::vector<KvOpenJob> opens;
  std::vector<KvReadJob> reads;
  std::vector<uint64_t> cancel_ids;
  std::vector<Reject> rej;
  {
    std::lock_guard<std::mutex> lock(mu);
    opens.swap(new_opens);
    reads.swap(new_reads);
    cancel_ids.swap(cancels);
    rej.swap(rejects);
  }
  for (KvOpenJob& j : opens) {
    add_pull(j.id, j.host, j.port, std::move(j.lease_token), j.deadline, false);
    busy = true;
  }
  for (Reject& r : rej) {
    add_pull(0, r.host, r.port, std::move(r.lease_token), UcxClock::now() + kRejectTimeout, true);
    busy = true;
  }
  for (KvReadJob& j : reads) {
    for (auto& [cookie, p] : pulls) {
      if (p->reject_only || p->id != j.id || p->read_requested) continue;
      p->read_requested = true;
      p->runs = std::move(j.runs);
      p->deadline = j.deadline;
      busy = true;
      break;
    }
  }
  for (uint64_t id : cancel_ids) {
    for (auto& [cookie, p] : pulls) {
      if (!p->reject_only && p->id == id) p->cancel_requested = true;
    }
  }
  for (ucp_conn_request_h req : conn_requests) accept(req);
  busy = busy || !conn_requests.empty();
  conn_requests.clear();
  std::vector<Inbound> msgs;
  msgs.swap(inbox);
  for (const Inbound& in : msgs) on_message(in);
  busy = busy || !msgs.empty();
  for (ucp_ep_h ep : failed_server_eps) {
    if (conns.erase(ep) != 0) close_ep(ep, true);
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
  sweep_peers();
  sweep_lease_maps();
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
  for (auto& [key, peer] : im.peers) im.close_ep(peer->ep, true);
  im.peers.clear();
  for (auto& [ep, conn] : im.conns) im.close_ep(ep, true);
  im.conns.clear();
  while (!im.closing.empty() && UcxClock::now() < until) im.tick();
}

void UcxTransport::open(KvOpenJob job) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->new_opens.push_back(std::move(job));
  }
  impl_->wake();
}

void UcxTransport::read(KvReadJob job) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->new_reads.push_back(std::move(job));
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

void UcxTransport::reject(std::string host, int32_t port, std::string lease_token) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->rejects.push_back({std::move(host), port, std::move(lease_token)});
  }
  impl_->wake();
}

uint64_t UcxTransport::connections_accepted() const {
  return impl_->accepted.load();
}

std::vector<KvPullResult> UcxTransport::take_results() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<KvPullResult> out;
  out.swap(impl_->results);
  return out;
}

}  // namespace llmserve
