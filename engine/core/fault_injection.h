// Test-only fault switches. The engine library links a weak default that turns every switch off;
// the test binaries build/llmserve-fault and unit_engine_fault link tests/fault/fault_switches.cpp,
// whose strong definitions read the LLMSERVE_FAULT_* environment. Release binaries have no switch.
#pragma once

#include <cstdint>

namespace llmserve {

// Steps after which the engine loop wedges (runs no step until shutdown), for readiness-watchdog
// tests; 0 = never.
uint64_t fault_wedge_engine_after_steps();

}  // namespace llmserve
