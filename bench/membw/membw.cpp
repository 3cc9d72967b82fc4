// Memory read bandwidth of this machine: every thread sums its share of a buffer much larger
// than the last-level cache with AVX2 loads; prints the best of several passes in GB/s, by wall
// clock and by each thread's own CPU time (the second stays meaningful on a loaded machine,
// where threads are descheduled part of the time). The buffer is on transparent huge pages, as
// llmserve's packed weights are (kernels/cpu/host_memory.cpp); --pages 4k for 4 KiB pages.
//   bench_membw [--threads N] [--mib SIZE] [--passes P] [--pages huge|4k]
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

namespace {

double sum_range(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  double s = 0;
  for (float v : t) s += v;
  return s;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  size_t mib = 1024;
  int passes = 5;
  bool huge = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--pages")) huge = std::strcmp(argv[i + 1], "4k") != 0;
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--mib")) mib = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--passes")) passes = std::atoi(argv[i + 1]);
  }
  threads = std::max(1, threads);
  const size_t n = mib * 1024 * 1024 / sizeof(float);
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t bytes = (n * sizeof(float) + kHuge - 1) / kHuge * kHuge;
  auto* buf = static_cast<float*>(std::aligned_alloc(huge ? kHuge : 64, bytes));
  if (buf == nullptr) {
    std::fprintf(stderr, "allocation of %zu MiB failed\n", mib);
    return 1;
  }
  if (huge) madvise(buf, bytes, MADV_HUGEPAGE);
  // First touch by the thread that reads each part.
  auto part = [&](int t, size_t& b, size_t& e) {
    b = n * t / threads / 32 * 32;
    e = n * (t + 1) / threads / 32 * 32;
  };
  std::vector<double> sums(threads), cpu_s(threads);
  auto run_all = [&](bool init) {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        size_t b, e;
        part(t, b, e);
        if (init) {
          for (size_t i = b; i < e; ++i) buf[i] = static_cast<float>(i & 7);
        } else {
          const double c0 = thread_cpu_seconds();
          sums[t] += sum_range(buf + b, e - b);
          cpu_s[t] = thread_cpu_seconds() - c0;
        }
      });
    }
    for (auto& th : ts) th.join();
  };
  run_all(true);
  double best = 0, best_cpu = 0;
  for (int p = 0; p < passes; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    run_all(false);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n * sizeof(float)) / s / 1e9);
    // Per-thread rate while running, summed over threads.
    double rate = 0;
    for (int t = 0; t < threads; ++t) {
      rate += static_cast<double>(n * sizeof(float)) / threads / cpu_s[t] / 1e9;
    }
    best_cpu = std::max(best_cpu, rate);
  }
  double check = 0;
  for (double s : sums) check += s;
  std::printf(
      "read bandwidth: %.2f GB/s wall, %.2f GB/s by thread CPU time (%d threads, %zu MiB buffer "
      "on %s pages, best of %d; checksum %.0f)\n",
      best, best_cpu, threads, mib, huge ? "huge" : "4 KiB", passes, check);
  std::free(buf);
  return 0;
}
