// matmul per weight type at the default model's shapes (SmolLM2-135M: hidden 576, kv 192,
// MLP 1536, vocab 49152), decode M = 1, 4, 16 and prefill M = 512; BM_MatmulPacked does the same
// for weights repacked at load (isa 0 = auto, 1 = AVX2, 2 = AVX-512 VNNI with the
// 512-bit Q4 pair kernels, 3 = AVX-512 VNNI on 256-bit vectors only). Counters: weight bytes
// read per second (GB/s) and GFLOP/s. BM_DecodeStep runs one decode step's worth of matmuls over a
// model-sized set of distinct weights (~98 MB), so its GB/s is the one to compare with
// bench_membw.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>

#include "bench_common.h"
#include "llmserve/kernels/matmul.h"
#include "llmserve/kernels/packed_weight.h"

namespace llmserve::kernels::bench {
namespace {

std::vector<uint8_t> weights(DType t, int64_t n, int64_t k) {
  std::vector<uint8_t> w(row_bytes(t, k) * n);
  std::mt19937 rng(7);
  for (auto& b : w) b = static_cast<uint8_t>(rng() & 0x77);  // keeps f16/bf16 fields finite
  return w;
}

void BM_Matmul(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t K = state.range(1), N = state.range(2), M = state.range(3);
  if (K % dtype_info(type).block_elems != 0) {
    state.SkipWithError("K not a multiple of the block size");
    return;
  }
  const auto w = weights(type, N, K);
  const auto x = random_vec(M * K);
  std::vector<float> y(M * N);
  auto& pool = bench_pool();
  for (auto _ : state) {
    matmul(pool, x.data(), M, K, type, w.data(), N, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(w.size()) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * M * N * K * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(dtype_name(type)));
}

void matmul_args(benchmark::internal::Benchmark* b) {
  // Q2_K / Q3_K / Q5_K have no integer kernel (a row dequantized to f32, then an f32 dot):
  // run at the K-quant-sized shape (K = 1536) beside Q4_K / Q6_K.
  const DType types[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,
                         DType::Q4_0, DType::Q4_1, DType::Q4_K, DType::Q6_K,
                         DType::Q2_K, DType::Q3_K, DType::Q5_K};
  const int64_t shapes[][2] = {{576, 576}, {576, 192}, {576, 1536}, {576, 49152}, {1536, 576}};
  for (DType t : types) {
    for (auto [k, n] : shapes) {
      if (k % dtype_info(t).block_elems != 0) continue;
      for (int64_t m : {1, 4, 16, 512}) {
        if (n == 49152 && m == 512) continue;  // LM head only runs on sampled rows
        b->Args({static_cast<int64_t>(t), k, n, m});
      }
    }
  }
  b->ArgNames({"type", "K", "N", "M"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_Matmul)->Apply(matmul_args);

void BM_MatmulPacked(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t K = state.range(1), N = state.range(2), M = state.range(3);
  const auto isa = static_cast<PackedIsa>(state.range(4));
  const auto precision = static_cast<ActPrecision>(state.range(5));
  if ((isa == PackedIsa::kAvx512Vnni || isa == PackedIsa::kAvx512Vnni256) &&
      !cpu_has_avx512_vnni()) {
    state.SkipWithError("no AVX-512 VNNI");
    return;
  }
  set_packed_isa(isa);
  const auto w = weights(type, N, K);
  const PackedWeight pw = pack_weight(type, w.data(), N, K);
  const auto x = random_vec(M * K);
  std::vector<float> y(M * N);
  auto& pool = bench_pool();
  for (auto _ : state) {
    matmul_packed(pool, x.data(), M, pw, y.data(), precision);
    benchmark::DoNotOptimize(y.data());
  }
  set_packed_isa(PackedIsa::kAuto);
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(w.size()) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * M * N * K * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(dtype_name(type)) + " " + std::string(act_precision_name(precision)));
}

void packed_args(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][2] = {{576, 576}, {576, 1536}, {1536, 576}, {576, 49152}};
  for (DType t : {DType::Q4_1, DType::Q8_0}) {
    for (auto [k, n] : shapes) {
      for (int64_t m : {1, 4, 16, 512}) {
        if (n == 49152 && m == 512) continue;
        for (int64_t isa : {1, 2, 3}) {
          for (int64_t prec : {0, 1}) b->Args({static_cast<int64_t>(t), k, n, m, isa, prec});
        }
      }
    }
  }
  b->ArgNames({"type", "K", "N", "M", "isa", "prec"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_MatmulPacked)->Apply(packed_args);

// Every packed format at SmolLM2-1.7B's shapes (hidden 2048, MLP 8192): q/o projection, gate/up
// and down, decode (M = 1) and prefill (M = 512), on the host's auto ISA, both precisions.
void packed_format_args(benchmark::internal::Benchmark* b) {
  const DType types[] = {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                         DType::Q3_K, DType::Q2_K, DType::F16,  DType::BF16};
  const int64_t shapes[][2] = {{2048, 2048}, {2048, 8192}, {8192, 2048}};
  for (DType t : types) {
    for (auto [k, n] : shapes) {
      for (int64_t m : {1, 512}) {
        for (int64_t prec : {0, 1}) {
          const bool is_float = t == DType::F16 || t == DType::BF16;
          if (is_float && prec == 0) continue;  // float panels ignore the precision
          b->Args({static_cast<int64_t>(t), k, n, m, 0, prec});
        }
      }
    }
  }
  b->ArgNames({"type", "K", "N", "M", "isa", "prec"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_MatmulPacked)->Name("BM_MatmulPackedFormats")->Apply(packed_format_args);

// FP8 e4m3 panels (128 x 128 block scales, as Qwen3-FP8 / model.quantize fp8) against BF16
// panels of the same shape: the weights FP8 checkpoints load as on the CPU, decode (M = 1, 8) at
// Llama-3.1-8B's down (K 14336) and gate / up (N 14336) shapes and SmolLM2-1.7B's gate / up;
// isa 1 = AVX2 forced, 0 = the host's choice.
void BM_MatmulPackedFp8(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t K = state.range(1), N = state.range(2), M = state.range(3);
  set_packed_isa(static_cast<PackedIsa>(state.range(4)));
  std::vector<uint8_t> w;
  std::vector<float> scales;
  PackedWeight pw;
  if (type == DType::F8_E4M3) {
    std::mt19937 rng(7);
    w.resize(static_cast<size_t>(N * K));
    for (uint8_t& b : w) b = static_cast<uint8_t>(rng() % 0x7e) | (rng() & 0x80);
    Fp8Scales grid{nullptr, 128, 128};
    scales.assign(grid.count(N, K), 0.001f);
    grid.data = scales.data();
    pw = pack_weight_fp8(w.data(), grid, N, K);
  } else {
    w = weights(type, N, K);
    pw = pack_weight(type, w.data(), N, K);
  }
  const auto x = random_vec(M * K);
  std::vector<float> y(M * N);
  auto& pool = bench_pool();
  for (auto _ : state) {
    matmul_packed(pool, x.data(), M, pw, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  set_packed_isa(PackedIsa::kAuto);
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(w.size()) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(dtype_name(type)));
}

void packed_fp8_args(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][2] = {{2048, 8192}, {4096, 14336}, {14336, 4096}};
  for (auto [k, n] : shapes) {
    for (int64_t m : {1, 8}) {
      for (int64_t isa : {0, 1}) {
        for (DType t : {DType::BF16, DType::F8_E4M3}) {
          b->Args({static_cast<int64_t>(t), k, n, m, isa});
        }
      }
    }
  }
  b->ArgNames({"type", "K", "N", "M", "isa"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_MatmulPackedFp8)->Apply(packed_fp8_args);

// The AVX2 kernels (isa 1) of Q4_0 and the K-quants in one pass (llama.cpp's precision, the
// default for K-quant files) at SmolLM2-1.7B's gate/up and down shapes, prefill and decode.
void packed_avx2_args(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][2] = {{2048, 8192}, {8192, 2048}};
  for (DType t : {DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q3_K}) {
    for (auto [k, n] : shapes) {
      for (int64_t m : {1, 512}) b->Args({static_cast<int64_t>(t), k, n, m, 1, 1});
    }
  }
  b->ArgNames({"type", "K", "N", "M", "isa", "prec"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_MatmulPacked)->Name("BM_MatmulPackedAvx2")->Apply(packed_avx2_args);

// One decode step of matmuls with the model's layout: 30 layers of Q4_1 projections and a
// Q8_0 LM head, each in its own buffer (as in the real model).
// packed = 1: the same weights repacked (isa and prec as in BM_MatmulPacked).
void BM_DecodeStep(benchmark::State& state) {
  const int64_t M = state.range(0);
  const bool packed = state.range(1) != 0;
  const auto isa = static_cast<PackedIsa>(state.range(2));
  const auto precision = static_cast<ActPrecision>(state.range(3));
  if ((isa == PackedIsa::kAvx512Vnni || isa == PackedIsa::kAvx512Vnni256) &&
      !cpu_has_avx512_vnni()) {
    state.SkipWithError("no AVX-512 VNNI");
    return;
  }
  set_packed_isa(isa);
  struct Mat {
    DType t;
    int64_t n, k;
    std::vector<uint8_t> w;
    PackedWeight p;
  };
  std::vector<Mat> mats;
  for (int l = 0; l < 30; ++l) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{576, 576},
                        {192, 576},
                        {192, 576},
                        {576, 576},
                        {1536, 576},
                        {1536, 576},
                        {576, 1536}}) {
      mats.push_back({DType::Q4_1, n, k, weights(DType::Q4_1, n, k), {}});
    }
  }
  mats.push_back({DType::Q8_0, 49152, 576, weights(DType::Q8_0, 49152, 576), {}});
  size_t bytes = 0;
  for (auto& m : mats) {
    bytes += m.w.size();
    if (packed) {
      m.p = pack_weight(m.t, m.w.data(), m.n, m.k);
      m.w = {};  // only the packed copy stays, as in the engine
    }
  }
  const auto x = random_vec(M * 1536);
  std::vector<float> y(M * 49152);
  auto& pool = bench_pool();
  for (auto _ : state) {
    for (auto& m : mats) {
      if (packed) {
        matmul_packed(pool, x.data(), M, m.p, y.data(), precision);
      } else {
        matmul(pool, x.data(), M, m.k, m.t, m.w.data(), m.n, y.data(), precision);
      }
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(M), benchmark::Counter::kIsIterationInvariantRate);
  set_packed_isa(PackedIsa::kAuto);
}
BENCHMARK(BM_DecodeStep)
    ->ArgsProduct({{1, 4, 16}, {0}, {0}, {0, 1}})
    ->ArgsProduct({{1, 4, 16}, {1}, {1, 2, 3}, {0, 1}})
    ->ArgNames({"M", "packed", "isa", "prec"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace llmserve::kernels::bench
