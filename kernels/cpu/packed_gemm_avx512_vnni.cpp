// Packed micro-kernels with AVX-512 VNNI on 256-bit vectors (vpdpbusd: 4 byte products summed
// straight into 32 bits). Everything in this file is built for that target and has internal
// linkage, so nothing here leaks into code run on CPUs without it. The target flags are set on this
// file alone in kernels/CMakeLists.txt (GCC and clang alike).
#include <immintrin.h>

#include "kernels/cpu/packed_layout.h"
#include "kernels/cpu/quantize_activations.h"

#include "kernels/cpu/packed_gemm_impl.h"

namespace llmserve::kernels::cpu {
namespace {

struct Avx512Vnni {
  using Acc4 = __m256i;
  static __m256i zero4() { return _mm256_setzero_si256(); }
  static __m256i dot_u4(__m256i s, __m256i w, __m256i x) { return _mm256_dpbusd_epi32(s, w, x); }
  static __m256i sum4(__m256i s) { return s; }
  static __m256i dot_s8(__m256i s, __m256i aw, __m256i xs) {
    return _mm256_dpbusd_epi32(s, aw, xs);
  }
};

}  // namespace

PackedKernels packed_kernels_avx512_vnni() {
  return make_packed_kernels<Avx512Vnni, 8>();
}

}  // namespace llmserve::kernels::cpu

