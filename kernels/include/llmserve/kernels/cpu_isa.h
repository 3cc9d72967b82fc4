// The instruction set the CPU kernels use, process-wide. kAuto takes the widest the CPU has;
// kAvx2 forces the AVX2 kernels everywhere (what an AVX2-only CPU runs); kAvx512 requires
// AVX-512F/BW/VL/DQ (the packed matmuls also need VNNI, else they stay on AVX2).
#pragma once

#include <optional>
#include <string_view>

namespace llmserve::kernels {

enum class CpuIsa { kAuto, kAvx2, kAvx512 };

std::string_view cpu_isa_name(CpuIsa isa);                   // "auto", "avx2" or "avx512"
std::optional<CpuIsa> parse_cpu_isa(std::string_view name);  // nullopt when unknown
bool cpu_supports(CpuIsa isa);                               // kAuto: always true
// Precondition: cpu_supports(isa). Set before the first kernel runs (not thread-safe against
// concurrent kernels); later calls switch the kernels for the next ones.
void set_cpu_isa(CpuIsa isa);
CpuIsa active_cpu_isa();  // resolved: kAvx2 or kAvx512

}  // namespace llmserve::kernels
