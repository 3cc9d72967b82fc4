// Shared pieces of the kernel benchmarks: the thread pool (LLMSERVE_BENCH_THREADS, default 2)
// and seeded random buffers.
#pragma once

#include <cstdlib>
#include <random>
#include <vector>

#include "llmserve/kernels/thread_pool.h"

namespace llmserve::kernels::bench {

inline ThreadPool& bench_pool() {
  static ThreadPool pool([] {
    const char* e = std::getenv("LLMSERVE_BENCH_THREADS");
    return e ? std::atoi(e) : 2;
  }());
  return pool;
}

inline std::vector<float> random_vec(size_t n, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace llmserve::kernels::bench
