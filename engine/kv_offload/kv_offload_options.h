// Settings of the tiers below the page pool (config section kv_offload).
#pragma once

#include <cstdint>
#include <string>

namespace llmserve {

struct KvOffloadOptions {
  int64_t disk_bytes = 0;  // disk tier budget; 0 = no disk tier
  std::string disk_path;   // directory of the disk tier's page files
  // Most pages waiting to be written (copied out of the pool, not yet on disk); more evicted
  // pages are not kept (counted as dropped) rather than grow memory without bound.
  int32_t max_pending_writes = 256;
  // Host-memory tier budget (above disk: pinned memory on CUDA, RAM on the CPU); 0 = none.
  int64_t host_bytes = 0;
  bool enabled() const { return disk_bytes > 0 || host_bytes > 0; }
};

}  // namespace llmserve
