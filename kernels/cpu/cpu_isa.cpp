#include "llmserve/kernels/cpu_isa.h"

#include <atomic>

#include "llmserve/kernels/packed_weight.h"

namespace llmserve::kernels {
namespace {

bool has_avx2() {
  __builtin_cpu_init();
  // Every AVX2 + FMA CPU has F16C (clang's builtin cannot name it).
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

std::atomic<CpuIsa> g_isa{CpuIsa::kAuto};

}  // namespace

std::string_view cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
    default:
      return "auto";
  }
}

std::optional<CpuIsa> parse_cpu_isa(std::string_view name) {
  if (name == "auto") return CpuIsa::kAuto;
  if (name == "avx2") return CpuIsa::kAvx2;
  if (name == "avx512") return CpuIsa::kAvx512;
  return std::nullopt;
}

bool cpu_supports(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx2:
      return has_avx2();
    case CpuIsa::kAvx512:
      return has_avx512();
    default:
      return true;
  }
}

void set_cpu_isa(CpuIsa isa) {
  g_isa.store(isa);
  set_packed_isa(isa == CpuIsa::kAvx2 ? PackedIsa::kAvx2 : PackedIsa::kAuto);
}

CpuIsa active_cpu_isa() {
  static const bool avx512 = has_avx512();
  const CpuIsa want = g_isa.load(std::memory_order_relaxed);
  if (want == CpuIsa::kAvx2 || !avx512) return CpuIsa::kAvx2;
  return CpuIsa::kAvx512;
}

}  // namespace llmserve::kernels
