#include "engine/core/fault_injection.h"

namespace llmserve {

__attribute__((weak)) uint64_t fault_wedge_engine_after_steps() {
  return 0;
}

}  // namespace llmserve
