// Linked into the CPU kernel and model tests: LLMSERVE_TEST_CPU_ISA=avx2|avx512 runs the whole
// binary with the kernels forced to that instruction set (ctest registers an AVX2 run of each),
// so the AVX2 kernels are tested on an AVX-512 host. A CPU without it fails, never skips.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "llmserve/kernels/cpu_isa.h"

namespace {

class CpuIsaEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* name = std::getenv("LLMSERVE_TEST_CPU_ISA");
    if (name == nullptr || *name == '\0') return;
    const auto isa = llmserve::kernels::parse_cpu_isa(name);
    ASSERT_TRUE(isa.has_value()) << "LLMSERVE_TEST_CPU_ISA: unknown ISA '" << name << "'";
    ASSERT_TRUE(llmserve::kernels::cpu_supports(*isa))
        << "LLMSERVE_TEST_CPU_ISA=" << name << ": this CPU lacks it";
    llmserve::kernels::set_cpu_isa(*isa);
    ASSERT_EQ(llmserve::kernels::active_cpu_isa(), *isa == llmserve::kernels::CpuIsa::kAuto
                                                       ? llmserve::kernels::active_cpu_isa()
                                                       : *isa);
    std::printf("[cpu isa] kernels forced to %s\n", name);
  }
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new CpuIsaEnvironment);

}  // namespace
