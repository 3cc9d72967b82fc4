// KvTransport over UCX's UCP API (TCP and shared memory; no RDMA needed). One thread owns the UCP
// worker. Producers listen on a socket address; a consumer's pull opens an endpoint, sends Hello
// with its layout as an active message, and on an accepted HelloReply (the producer's cache
// address and packed remote key) reads each block run of each cache array with one RMA get
// straight into its own pages, then sends Release and waits for the ack that the lease was still
// pinned. Control messages (kv_messages.h) travel as eager active messages.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/kv_transfer/kv_lease_table.h"
#include "engine/kv_transfer/kv_messages.h"
#include "engine/kv_transfer/kv_transport.h"

namespace llmserve {

struct UcxTransportOptions {
  bool listen = false;  // producer: accept pulls on listen_host:listen_port (0 = any free port)
  std::string listen_host = "0.0.0.0";
  int32_t listen_port = 0;
  KvLayout layout;                  // this daemon's, array_block_bytes filled
  void* base = nullptr;             // the KV cache memory (host), all arrays
  uint64_t bytes = 0;               // its size
  std::vector<KvArraySpan> arrays;  // each array's offset from base and block bytes
  KvLeaseTable* leases = nullptr;   // producer: Release ends leases here
  // Called on the transport thread when the engine has work: a pull result, a released lease.
  std::function<void()> on_result;
};

class UcxTransport final : public KvTransport {
 public:
  // Creates the UCP context (UCX_* environment variables apply, e.g. UCX_TLS=tcp or shm,tcp),
  // maps the cache memory, starts listening and the thread. UNAVAILABLE naming the UCX error.
  static Result<std::unique_ptr<UcxTransport>> create(UcxTransportOptions options);
  ~UcxTransport() override;

  int32_t port() const override { return port_; }
  void pull(KvPullJob job) override;
  void cancel(uint64_t id) override;
  void reject(std::string host, int32_t port, std::string lease_id) override;
  std::vector<KvPullResult> take_results() override;

  struct Impl;

 private:
  explicit UcxTransport(std::unique_ptr<Impl> impl);
  void run();

  std::unique_ptr<Impl> impl_;
  int32_t port_ = 0;
  std::thread thread_;
};

}  // namespace llmserve
