// Packed micro-kernels, AVX2 baseline: vpmaddubsw pairs summed in 16 bits (exact for 4-bit
// weights: 8 steps x 2 x 15 x 127 < 2^15), widened once per block (Q5_K's twice: kWidenMidBlock).
#include "kernels/cpu/packed_avx2_isa.h"

namespace llmserve::kernels::cpu {

PackedKernels packed_kernels_avx2() {
  PackedKernels k = make_packed_kernels<Avx2, 4, 3>();
  add_unpacked_kernels_avx2(k);
  return k;
}

}  // namespace llmserve::kernels::cpu
