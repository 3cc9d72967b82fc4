// The transport that moves KV blocks between daemons, behind one small interface so the engine
// never sees the wire (engine/kv_transfer/ucx_transport.h is the one implementation). A transport
// serves the producer's side (peers read its pinned blocks; Release ends a lease in the
// KvLeaseTable) and runs the consumer's pulls, each asynchronously on its own thread: results
// are collected with take_results() on the engine thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace llmserve {

// `count` consecutive blocks from remote_first on the producer into local_first here.
struct KvBlockRun {
  int32_t remote_first = 0;
  int32_t local_first = 0;
  int32_t count = 0;
};

struct KvPullJob {
  uint64_t id = 0;  // the caller's key (the scheduler's request id)
  std::string host;
  int32_t port = 0;
  std::string lease_id;
  std::vector<KvBlockRun> runs;
  std::chrono::steady_clock::time_point deadline;
};

// Why a pull did not give the blocks; the label of the fallbacks metric.
enum class KvPullError { kNone, kConnect, kLayout, kTransfer, kTimeout, kLease, kCancelled };
const char* kv_pull_error_name(KvPullError e);

struct KvPullResult {
  uint64_t id = 0;
  KvPullError error = KvPullError::kNone;
  std::string message;  // with an error
  uint64_t bytes = 0;
  double seconds = 0;  // from the job's start to its release acknowledged
};

class KvTransport {
 public:
  virtual ~KvTransport() = default;
  // The port producers listen on (the one bound when 0 was asked); 0 when not listening.
  virtual int32_t port() const = 0;
  // Starts a pull: handshake (layout check) on a new connection, one RMA read per block run and
  // array, then Release; the result comes back through take_results().
  virtual void pull(KvPullJob job) = 0;
  // The job stops as soon as possible and reports kCancelled (or its real outcome if it ended).
  virtual void cancel(uint64_t id) = 0;
  // Tells a producer the lease is not wanted (a refused handoff); best effort, no result.
  virtual void reject(std::string host, int32_t port, std::string lease_id) = 0;
  virtual std::vector<KvPullResult> take_results() = 0;
};

}  // namespace llmserve
