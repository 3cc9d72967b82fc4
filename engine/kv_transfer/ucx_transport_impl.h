// The UCX transport's state, shared by ucx_transport.cpp (the thread, the listener, the queues),
// ucx_consumer.cpp (peer connections and pulls) and ucx_producer.cpp (the answers to Hello, Open
// and Release, and the per-lease memory registrations). Every member is touched on the transport
// thread only, except the queues under `mu`.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/socket.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "engine/kv_transfer/ucx_transport.h"

namespace llmserve {

using UcxClock = std::chrono::steady_clock;
inline constexpr unsigned kUcxAmId = 0x4b;  // the active-message id of every control message
inline constexpr const char* kKvMacLabel = "llmserve-kv/2";

Status ucx_error(const std::string& what, ucs_status_t st);
Result<sockaddr_storage> resolve_ipv4(const std::string& host, int32_t port, socklen_t* len);

struct UcxTransport::Impl {
  // Consumer: one connection to a producer, shared by every pull to it.
  struct Peer {
    enum class State { kConnecting, kReady, kFailed };
    std::string key;  // host:port
    std::string host;
    int32_t port = 0;
    uint64_t cookie = 0;  // of its Hello
    ucp_ep_h ep = nullptr;
    State state = State::kConnecting;
    std::string nonce_c, nonce_p;
    std::string layout_error;  // the producer's layout differs: no pull, but Release works
    KvPullError error = KvPullError::kNone;
    std::string message;
    UcxClock::time_point last_used = UcxClock::now();
    int reads_in_flight = 0;  // RMA gets of all its pulls
  };
  // Consumer: one pull (or a reject: a Release only) of one lease.
  struct Pull {
    enum class Phase { kWaitPeer, kOpening, kOpened, kReading, kReleasing, kDone };
    uint64_t id = 0;  // the engine's
    uint64_t cookie = 0;
    bool reject_only = false;
    Phase phase = Phase::kWaitPeer;
    std::string peer_key;
    std::string lease_token;
    UcxClock::time_point deadline;
    UcxClock::time_point start = UcxClock::now();
    KvOpenReply lease;              // from an accepted OpenReply
    std::vector<ucp_rkey_h> rkeys;  // per region of `lease`
    std::vector<KvBlockRun> runs;   // from read()
    bool read_requested = false;
    bool cancel_requested = false;
    bool released = false;  // a Release was sent
    int outstanding = 0;    // RMA gets in flight
    KvPullError error = KvPullError::kNone;
    std::string message;
    uint64_t bytes = 0;
  };
  // Producer: one accepted connection.
  struct Conn {
    std::string nonce_c, nonce_p;
    bool greeted = false;    // a HelloReply accepted it (Open and Release are answered)
    bool layout_ok = false;  // and the layouts match (an Open can succeed)
  };
  // Producer: the registrations of one lease's regions, until it ends.
  struct LeaseMap {
    std::vector<ucp_mem_h> memhs;
    KvOpenReply reply;  // accepted, regions filled, cookie and mac left to each answer
  };
  struct Inbound {
    ucp_ep_h reply_ep = nullptr;
    std::string bytes;
  };
  struct Reject {
    std::string host;
    int32_t port = 0;
    std::string lease_token;
  };

  UcxTransportOptions opt;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_listener_h listener = nullptr;
  int wake_fd = -1;
  int worker_fd = -1;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> accepted{0};

  // Filled by UCX callbacks on the transport thread.
  std::vector<ucp_conn_request_h> conn_requests;
  std::vector<Inbound> inbox;
  std::vector<ucp_ep_h> failed_server_eps;
  std::vector<void*> closing;  // close requests of endpoints

  std::map<std::string, std::unique_ptr<Peer>> peers;         // by host:port
  std::unordered_map<uint64_t, std::unique_ptr<Pull>> pulls;  // by cookie
  std::unordered_map<ucp_ep_h, Conn> conns;                   // producer's accepted endpoints
  std::unordered_map<std::string, LeaseMap> lease_maps;       // by lease token
  UcxClock::time_point next_lease_sweep = UcxClock::now();
  uint64_t next_cookie = 1;

  std::mutex mu;  // guards the queues below (any thread)
  std::vector<KvOpenJob> new_opens;
  std::vector<KvReadJob> new_reads;
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
  // Sends `m` on `ep`, MAC'd over the two nonces when the message carries a mac.
  bool send(ucp_ep_h ep, KvMessage m, const std::string& nonce_c, const std::string& nonce_p);
  bool verify(const KvMessage& m, const std::string& nonce_c, const std::string& nonce_p) const;
  void on_message(const Inbound& in);
  void close_ep(ucp_ep_h ep, bool force);

  // Consumer (ucx_consumer.cpp).
  Pull& add_pull(uint64_t id, const std::string& host, int32_t port, std::string lease_token,
                 UcxClock::time_point deadline, bool reject_only);
  Peer* peer_for(const std::string& host, int32_t port);
  void on_hello_reply(const KvHelloReply& r);
  void on_open_reply(const KvOpenReply& r);
  void on_release_ack(const KvReleaseAck& a);
  void on_peer_error(Peer& peer, ucs_status_t status);
  void start_reads(Pull& p);
  void fail(Pull& p, KvPullError e, std::string message);
  bool advance(Pull& p);  // true when the pull is over and may be erased
  void finish(Pull& p);
  void post(KvPullResult r);  // to take_results(), waking the engine
  void sweep_peers();

  // Producer (ucx_producer.cpp).
  void accept(ucp_conn_request_h req);
  void on_hello(ucp_ep_h ep, const KvHello& h);
  void on_open(ucp_ep_h ep, const KvOpen& o);
  void on_release(ucp_ep_h ep, const KvRelease& r);
  const LeaseMap* map_lease(const std::string& token, const KvLeaseTable::Lease& lease,
                            std::string* why);
  void unmap_lease(const std::string& token);
  void sweep_lease_maps();

  bool tick();  // one pass of work; true when something happened
};

// Callbacks registered with UCX.
void ucx_on_send_done(void* request, ucs_status_t status, void* user_data);
void ucx_on_get_done(void* request, ucs_status_t status, void* user_data);
void ucx_on_peer_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status);

}  // namespace llmserve
