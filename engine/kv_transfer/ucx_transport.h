// KvTransport over UCX's UCP API (TCP and shared memory; no RDMA needed). One thread owns the UCP
// worker. Producers listen on a socket address. A consumer keeps one connection per producer
// (reused by every pull to it, several pulls in flight): Hello / HelloReply once per connection
// (nonces both ways; the reply's MAC proves the producer holds the deployment's secret), then per
// pull Open (MAC'd: proves the consumer does) / OpenReply (what the lease holds, and a remote key
// of each region of exactly the lease's blocks), RMA gets straight into the consumer's pages, and
// Release / ReleaseAck. Control messages (kv_messages.h) travel as eager active messages.
//
// UCX serves RMA reads of registered memory to any endpoint it has accepted: the regions are
// registered per lease and unregistered when it ends, the listener refuses connections from
// addresses outside `allowed_peers` (when set), and `net_devices` keeps UCX's own transports off
// every other interface.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/kv_transfer/kv_auth.h"
#include "engine/kv_transfer/kv_lease_table.h"
#include "engine/kv_transfer/kv_messages.h"
#include "engine/kv_transfer/kv_transport.h"

namespace llmserve {

struct UcxTransportOptions {
  bool listen = false;  // producer: accept pulls on listen_host:listen_port (0 = any free port)
  std::string listen_host = "127.0.0.1";
  int32_t listen_port = 0;
  // UCX_NET_DEVICES for this transport's context (e.g. "lo"); "" = UCX's default (every device),
  // or the UCX_NET_DEVICES environment variable when set.
  std::string net_devices;
  // IPv4 addresses a producer accepts connections from; empty = any (the secret still applies).
  std::vector<std::string> allowed_peers;
  KvAuth auth;                      // the deployment's secret
  KvLayout layout;                  // this daemon's, array_block_bytes filled
  void* base = nullptr;             // the KV cache memory (host), all arrays
  uint64_t bytes = 0;               // its size
  std::vector<KvArraySpan> arrays;  // each array's offset from base and block bytes
  KvLeaseTable* leases = nullptr;   // producer: Open reads and Release ends leases here
  // Called on the transport thread when the engine has work: a pull result, a released lease.
  std::function<void()> on_result;
};

class UcxTransport final : public KvTransport {
 public:
  // Creates the UCP context (UCX_* environment variables apply, e.g. UCX_TLS=tcp or shm,tcp),
  // starts listening and the thread. UNAVAILABLE naming the UCX error.
  static Result<std::unique_ptr<UcxTransport>> create(UcxTransportOptions options);
  ~UcxTransport() override;

  int32_t port() const override { return port_; }
  void open(KvOpenJob job) override;
  void read(KvReadJob job) override;
  void cancel(uint64_t id) override;
  void reject(std::string host, int32_t port, std::string lease_token) override;
  std::vector<KvPullResult> take_results() override;
  // Producer: connections accepted since the start (a consumer reuses one per producer).
  uint64_t connections_accepted() const;

  struct Impl;

 private:
  explicit UcxTransport(std::unique_ptr<Impl> impl);
  void run();

  std::unique_ptr<Impl> impl_;
  int32_t port_ = 0;
  std::thread thread_;
};

// The dotted IPv4 address `host` resolves to; "" when it does not.
std::string kv_resolve_ipv4(const std::string& host);

// The network interface that holds IPv4 address `host` ("lo" for 127.0.0.1); "" for 0.0.0.0 or
// an address no interface holds (a name is resolved first).
std::string kv_interface_of(const std::string& host);

}  // namespace llmserve
