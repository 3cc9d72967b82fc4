// The fault switches of the test binaries (engine/core/fault_injection.h):
// LLMSERVE_FAULT_WEDGE_ENGINE=N wedges the engine loop after N steps (N >= 1; 0 or junk = 1).
#include <cstdlib>

#include "engine/core/fault_injection.h"

namespace llmserve {

uint64_t fault_wedge_engine_after_steps() {
  const char* v = std::getenv("LLMSERVE_FAULT_WEDGE_ENGINE");
  if (v == nullptr || *v == '\0') return 0;
  const long long n = std::atoll(v);
  return n > 0 ? static_cast<uint64_t>(n) : 1;
}

}  // namespace llmserve
