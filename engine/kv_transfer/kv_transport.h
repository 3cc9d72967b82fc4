// The transport that moves KV blocks between daemons, behind one small interface so the engine
// never sees the wire (engine/kv_transfer/ucx_transport.h is the one implementation). A transport
// serves the producer's side (authenticated peers read the regions of a lease they open; Release
// ends it in the KvLeaseTable) and runs the consumer's pulls asynchronously on its own thread, in
// two stages: open (connect or reuse the producer's connection, authenticate, learn what the
// lease holds) and read (RMA reads into local blocks, then Release). Results are collected with
// take_results() on the engine thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace llmserve {

// `count` consecutive lease positions from remote_first into local blocks from local_first.
struct KvBlockRun {
  int32_t remote_first = 0;
  int32_t local_first = 0;
  int32_t count = 0;
};

struct KvOpenJob {
  uint64_t id = 0;  // the caller's key (the scheduler's request id)
  std::string host;
  int32_t port = 0;
  std::string lease_token;
  std::chrono::steady_clock::time_point deadline;  // for the open stage
};

struct KvReadJob {
  uint64_t id = 0;  // an opened pull's
  std::vector<KvBlockRun> runs;
  std::chrono::steady_clock::time_point deadline;
};

// What the producer attests its lease holds (authenticated by the deployment's secret).
struct KvLeaseInfo {
  int32_t num_tokens = 0;
  uint64_t prompt_hash = 0;
  uint32_t num_blocks = 0;
};

// Why a pull did not give the blocks; the label of the fallbacks metric.
enum class KvPullError { kNone, kConnect, kLayout, kTransfer, kTimeout, kLease, kCancelled, kAuth };
const char* kv_pull_error_name(KvPullError e);

struct KvPullResult {
  enum class Stage { kOpened, kDone };
  uint64_t id = 0;
  Stage stage = Stage::kDone;  // kOpened: only without an error; read() may follow
  KvPullError error = KvPullError::kNone;
  std::string message;  // with an error
  KvLeaseInfo lease;    // kOpened
  uint64_t bytes = 0;   // kDone
  double seconds = 0;   // kDone: from the first read to the release acknowledged
};

class KvTransport {
 public:
  virtual ~KvTransport() = default;
  // The port producers listen on (the one bound when 0 was asked); 0 when not listening.
  virtual int32_t port() const = 0;
  // Opens a lease on its producer; a kOpened result (or a kDone one with the error) follows.
  virtual void open(KvOpenJob job) = 0;
  // Reads an opened lease's positions into local blocks, then releases it; a kDone result follows.
  virtual void read(KvReadJob job) = 0;
  // The pull stops as soon as possible (its reads finish first) and reports kCancelled (or its
  // real outcome if it ended); an opened lease is released.
  virtual void cancel(uint64_t id) = 0;
  // Tells a producer the lease is not wanted (a refused handoff); best effort, no result.
  virtual void reject(std::string host, int32_t port, std::string lease_token) = 0;
  virtual std::vector<KvPullResult> take_results() = 0;
};

}  // namespace llmserve
