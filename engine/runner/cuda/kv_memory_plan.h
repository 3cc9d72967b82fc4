// KV-cache sizing on a GPU (DESIGN §3): after a profiling forward pass at the largest batch,
// num_blocks = (total x gpu_memory_utilization - this process's peak use) / block bytes, at most
// what the device has free.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace llmserve {

struct KvMemoryPlan {
  int64_t num_blocks = 0;
  std::string arithmetic;  // the formula with its numbers, for the log
};

// peak_used_bytes: device memory this process used at the profiling peak, the profiling KV
// cache excluded (other processes' memory is not ours to count). available_bytes: what the
// device can still give (free memory plus the profiling cache about to be released); the plan
// never takes more, so a second daemon on a shared GPU gets what is left, not an out-of-memory.
// Errors: utilization outside (0, 1], zero block bytes, or no room for a single block.
Result<KvMemoryPlan> plan_kv_blocks(uint64_t total_bytes, uint64_t peak_used_bytes,
                                    double gpu_memory_utilization, uint64_t block_bytes,
                                    uint64_t available_bytes = UINT64_MAX);

}  // namespace llmserve
