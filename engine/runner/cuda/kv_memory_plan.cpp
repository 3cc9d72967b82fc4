#include "engine/runner/cuda/kv_memory_plan.h"

#include <cmath>
#include <cstdio>

namespace llmserve {
namespace {

std::string mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

Result<KvMemoryPlan> plan_kv_blocks(uint64_t total_bytes, uint64_t peak_used_bytes,
                                    double gpu_memory_utilization, uint64_t block_bytes,
                                    uint64_t available_bytes) {
  if (!(gpu_memory_utilization > 0.0 && gpu_memory_utilization <= 1.0)) {
    return invalid_argument("kv plan: gpu_memory_utilization must be in (0, 1]");
  }
  if (block_bytes == 0) return invalid_argument("kv plan: block bytes must be positive");
  const auto budget =
      static_cast<uint64_t>(std::floor(static_cast<double>(total_bytes) * gpu_memory_utilization));
  char util[32];
  std::snprintf(util, sizeof util, "%.3f", gpu_memory_utilization);
  KvMemoryPlan plan;
  plan.num_blocks =
      budget > peak_used_bytes ? static_cast<int64_t>((budget - peak_used_bytes) / block_bytes) : 0;
  plan.arithmetic = "num_blocks = (total " + mib(total_bytes) + " x " + util + " - peak " +
                    mib(peak_used_bytes) + ") / " + std::to_string(block_bytes) +
                    " bytes per block = " + std::to_string(plan.num_blocks);
  const auto fits = static_cast<int64_t>(available_bytes / block_bytes);
  if (plan.num_blocks > fits) {
    plan.num_blocks = fits;
    plan.arithmetic += ", capped at " + std::to_string(fits) + " by the " + mib(available_bytes) +
                       " the device has free (other processes use the rest)";
  }
  if (plan.num_blocks <= 0) {
    return resource_exhausted("kv plan: no room for the KV cache: " + plan.arithmetic);
  }
  return plan;
}

}  // namespace llmserve
