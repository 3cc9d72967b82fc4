// bench_cuda [--model-preset llama-3.1-8b|llama-3.2-1b|none] [--model-fp8]: prints Markdown
// tables; --model-fp8 also runs the model's decode with FP8 weights (model_bench.cpp).
#include <cstdio>
#include <cstring>
#include <string>

#include "bench/cuda/bench_util.h"
#include "engine/runner/cuda/cuda_device.h"

int main(int argc, char** argv) {
  using namespace llmserve;
  const char* preset = "llama-3.1-8b";
  bool fp8 = false;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 < argc && std::strcmp(argv[i], "--model-preset") == 0) preset = argv[i + 1];
    if (std::strcmp(argv[i], "--model-fp8") == 0) fp8 = true;
  }
  if (cuda_device_count() == 0) {
    std::printf("no CUDA device: nothing to benchmark\n");
    return 0;
  }
  auto info = cuda_device_info(0);
  if (info.is_ok()) {
    std::printf("## GPU: %s (sm_%d%d, %.1f GiB)\n\n", info->name.c_str(), info->sm_major,
                info->sm_minor, static_cast<double>(info->total_bytes) / (1 << 30));
  }
  const double bw = bench::copy_bandwidth_gbs();
  std::printf("Device-to-device copy: %.0f GB/s (read + write)\n\n", bw);
  bench::run_kernel_benchmarks(bw);
  bench::run_decode_attention_benchmarks(bw);
  bench::run_prefill_attention_benchmarks();
  if (std::strcmp(preset, "none") == 0) return 0;
  const int rc = bench::run_model_benchmarks(preset, bw);
  return fp8 ? rc | bench::run_model_benchmarks(preset, bw, true) : rc;
}
