// engine.cpu_isa's kernel switch: names, the CPU check, and that forcing AVX2 moves both the
// packed matmuls and attention off AVX-512 (and back).
#include "llmserve/kernels/cpu_isa.h"

#include <gtest/gtest.h>

#include "llmserve/kernels/packed_weight.h"

namespace llmserve::kernels {
namespace cpu {
bool attention_avx512_available();
}  // namespace cpu
namespace {

TEST(CpuIsa, NamesRoundTrip) {
  for (CpuIsa isa : {CpuIsa::kAuto, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    EXPECT_EQ(parse_cpu_isa(cpu_isa_name(isa)), isa);
  }
  EXPECT_FALSE(parse_cpu_isa("sse4").has_value());
  EXPECT_FALSE(parse_cpu_isa("AVX2").has_value());
}

TEST(CpuIsa, ForcingAvx2MovesEveryKernelAndAutoRestores) {
  ASSERT_TRUE(cpu_supports(CpuIsa::kAvx2));  // the binary is built for AVX2
  const CpuIsa before = active_cpu_isa();
  set_cpu_isa(CpuIsa::kAvx2);
  EXPECT_EQ(active_cpu_isa(), CpuIsa::kAvx2);
  EXPECT_EQ(active_packed_isa(), PackedIsa::kAvx2);
  EXPECT_FALSE(cpu::attention_avx512_available());
  if (cpu_supports(CpuIsa::kAvx512)) {
    set_cpu_isa(CpuIsa::kAvx512);
    EXPECT_EQ(active_cpu_isa(), CpuIsa::kAvx512);
    EXPECT_TRUE(cpu::attention_avx512_available());
    EXPECT_EQ(active_packed_isa(),
              cpu_has_avx512_vnni() ? PackedIsa::kAvx512Vnni : PackedIsa::kAvx2);
  }
  set_cpu_isa(CpuIsa::kAuto);
  EXPECT_EQ(active_cpu_isa(), cpu_supports(CpuIsa::kAvx512) ? CpuIsa::kAvx512 : CpuIsa::kAvx2);
  set_cpu_isa(before);
}

}  // namespace
}  // namespace llmserve::kernels
