// The UCX transport's state, shared by ucx_transport.cpp (the thread, the listener, the
// callbacks) and ucx_pull.cpp (one pull's steps). Every member is touched on the transport thread
// only, except the queues under `mu`.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include "engine/kv_transfer/ucx_transport.h"

namespace llmserve {

using UcxClock = std::chrono::steady_clock;
inline constexpr unsigned kUcxAmId = 0x4b;  // the active-message id of every control message

Status ucx_error(const std::string& what, ucs_status_t st);
Result<sockaddr_storage> resolve_ipv4(const std::string& host, int32_t port, socklen_t* len);

struct UcxTransport::Impl {
  // One pull (or a reject: a Release only), from the endpoint's creation to its close.
  struct Pull {
    enum class Phase { kHello, kReading, kReleasing, kClosing };
    Impl* impl = nullptr;
    KvPullJob job;
    bool reject_only = false;
    uint64_t cookie = 0;
    Phase phase = Phase::kHello;
    ucp_ep_h ep = nullptr;
    ucp_rkey_h rkey = nullptr;
    int outstanding = 0;  // RMA gets in flight
    void* close_req = nullptr;
    KvPullError error = KvPullError::kNone;
    std::string message;
    UcxClock::time_point start = UcxClock::now();
    uint64_t bytes = 0;
  };
  struct Inbound {
    ucp_ep_h reply_ep = nullptr;
    std::string bytes;
  };
  struct Reject {
    std::string host;
    int32_t port = 0;
    std::string lease_id;
  };

  UcxTransportOptions opt;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_mem_h memh = nullptr;
  std::string packed_rkey;
  ucp_listener_h listener = nullptr;
  int wake_fd = -1;
  int worker_fd = -1;
  std::atomic<bool> stop{false};

  // Filled by UCX callbacks on the transport thread.
  std::vector<ucp_conn_request_h> conn_requests;
  std::vector<Inbound> inbox;
  std::vector<ucp_ep_h> server_eps, failed_server_eps;
  std::vector<void*> closing;  // close requests of server endpoints

  std::unordered_map<uint64_t, std::unique_ptr<Pull>> pulls;  // by cookie
  uint64_t next_cookie = 1;

  std::mutex mu;  // guards the queues below (any thread)
  std::vector<KvPullJob> new_jobs;
  std::vector<uint64_t> cancels;
  std::vector<Reject> rejects;
  std::vector<KvPullResult> results;

  ~Impl();
  Status init();
  void wake() const {
    const uint64_t one = 1;
    ssize_t n = ::write(wake_fd, &one, sizeof(one));
    (void)n;
  }
  bool send(ucp_ep_h ep, const KvMessage& m);
  void start_pull(std::unique_ptr<Pull> p);
  void on_message(const Inbound& in);
  void on_hello_reply(Pull& p, const KvHelloReply& r);
  void fail(Pull& p, KvPullError e, std::string message);
  void close_pull(Pull& p);
  bool advance(Pull& p);  // true when the pull is over and may be erased
  bool tick();            // one pass of work; true when something happened
};

// Callbacks the pull steps register with UCX.
void ucx_on_send_done(void* request, ucs_status_t status, void* user_data);
void ucx_on_get_done(void* request, ucs_status_t status, void* user_data);
void ucx_on_client_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status);

}  // namespace llmserve
