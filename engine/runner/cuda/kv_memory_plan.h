// KV-cache sizing on a GPU (DESIGN §3): after a profiling forward pass at the largest batch,
// num_blocks = (total x gpu_memory_utilization - peak use) / block bytes.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace llmserve {

struct KvMemoryPlan {
  int64_t num_blocks = 0;
  std::string arithmetic;  // the formula with its numbers, for the log
};

// peak_used_bytes: device memory in use at the profiling peak, the profiling KV cache excluded.
// Errors: utilization outside (0, 1], zero block bytes, or no room for a single block.
Result<KvMemoryPlan> plan_kv_blocks(uint64_t total_bytes, uint64_t peak_used_bytes,
                                    double gpu_memory_utilization, uint64_t block_bytes);

}  // namespace llmserve
