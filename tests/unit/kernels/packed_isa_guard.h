// Test helper: forces the packed kernels' instruction set for a scope and restores the one the
// binary runs with (LLMSERVE_TEST_CPU_ISA may have forced AVX2).
#pragma once

#include "llmserve/kernels/packed_weight.h"

namespace llmserve::kernels::testing {

struct IsaGuard {
  explicit IsaGuard(PackedIsa isa) : previous(active_packed_isa()) { set_packed_isa(isa); }
  ~IsaGuard() { set_packed_isa(previous); }
  PackedIsa previous;
};

}  // namespace llmserve::kernels::testing
