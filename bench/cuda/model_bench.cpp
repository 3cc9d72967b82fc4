// Decode throughput of a dummy-weights model on CudaOps: batch 1 and 64 at 512 tokens of
// context, with CUDA graphs (and batch 1 eager), against the weight-read floor; the CPU gap is
// the wall time per step minus the GPU time between events around it.
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/cuda/bench_util.h"
#include "engine/model/dummy_model.h"
#include "engine/model/llama_graph.h"
#include "engine/runner/cuda/cuda_ops.h"

namespace llmserve::bench {
namespace {

constexpr int kContext = 512, kMaxSeqs = 64, kBlockSize = 16;
constexpr int kBlocksPerSeq = (kContext + 64) / kBlockSize;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int run_model_benchmarks(const char* preset, double bw) {
  auto t0 = std::chrono::steady_clock::now();
  auto path = write_dummy_gguf(preset, "/tmp", 1);
  if (!path.is_ok()) return std::printf("dummy model: %s\n", path.status().message().c_str()), 1;
  auto model = load_model(path.value());
  if (!model.is_ok()) return std::printf("load: %s\n", model.status().message().c_str()), 1;
  const ModelConfig& c = (*model)->config();
  std::printf("Model %s (dummy weights): written and mapped in %.1f s\n", preset,
              seconds_since(t0));
  CudaOpsOptions o;
  o.max_tokens = 2048;
  o.max_samples = kMaxSeqs;
  o.max_num_seqs = kMaxSeqs;
  o.max_model_len = kBlocksPerSeq * kBlockSize;
  auto ops_r = CudaOps::create(o);
  if (!ops_r.is_ok()) return std::printf("cuda ops: %s\n", ops_r.status().message().c_str()), 1;
  CudaOps& ops = *ops_r.value();
  KvCacheSpec spec{c.num_layers, static_cast<int64_t>(kMaxSeqs) * kBlocksPerSeq,
                   static_cast<int>(c.num_kv_heads), kBlockSize, static_cast<int>(c.head_dim)};
  if (Status st = ops.alloc_kv_cache(spec); !st.is_ok())
    return std::printf("kv: %s\n", st.message().c_str()), 1;
  t0 = std::chrono::steady_clock::now();
  auto graph_r = LlamaGraph::create(**model, ops, o.max_tokens, o.max_samples);
  if (!graph_r.is_ok()) return std::printf("graph: %s\n", graph_r.status().message().c_str()), 1;
  LlamaGraph& graph = *graph_r.value();
  std::printf("Weights uploaded as BF16 in %.1f s\n", seconds_since(t0));
  const double weight_bytes = static_cast<double>((*model)->parameter_count()) * 2.0;
  const double floor_ms = weight_bytes / (bw * 1e6);
  std::printf("Weight bytes %.2f GB; weight-read floor %.3f ms per step at %.0f GB/s\n\n",
              weight_bytes / 1e9, floor_ms, bw);
  if (auto plan = ops.plan_kv_cache(0.9); plan.is_ok()) {
    std::printf("KV plan at gpu_memory_utilization 0.9: %s\n\n", plan->arithmetic.c_str());
  }

  std::printf(
      "| decode | graphs | ms/step | tok/s | %% of weight-read floor | CPU gap us/step |\n");
  std::printf("|---|---|---|---|---|---|\n");
  cudaEvent_t ea, eb;
  cudaEventCreate(&ea);
  cudaEventCreate(&eb);
  for (const auto& [B, graphs] : {std::pair{1, true}, std::pair{1, false}, std::pair{64, true}}) {
    ops.set_cuda_graphs(graphs);
    std::vector<int32_t> tok(B), pos(B, kContext - 1), qs(B + 1), seq(B, kContext), slots(B),
        samples(B), bt(static_cast<size_t>(B) * kBlocksPerSeq);
    std::vector<uint8_t> pre(B, 0);
    for (int b = 0; b < B; ++b) {
      tok[b] = (b * 131) % static_cast<int>(c.vocab_size);
      qs[b + 1] = b + 1;
      samples[b] = b;
      slots[b] = (b * kBlocksPerSeq + (kContext - 1) / kBlockSize) * kBlockSize +
                 (kContext - 1) % kBlockSize;
      for (int j = 0; j < kBlocksPerSeq; ++j)
        bt[static_cast<size_t>(b) * kBlocksPerSeq + j] = b * kBlocksPerSeq + j;
    }
    ForwardBatch fb{tok, pos, qs, seq, bt, kBlocksPerSeq, slots, samples, pre, B};
    for (int i = 0; i < 3; ++i) (void)graph.forward(fb);  // capture + warm-up
    const int steps = 20;
    double gpu_ms = 0;
    const auto t = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
      cudaEventRecord(ea, ops.stream());
      auto r = graph.forward(fb);
      cudaEventRecord(eb, ops.stream());
      cudaEventSynchronize(eb);
      float ms = 0;
      cudaEventElapsedTime(&ms, ea, eb);
      gpu_ms += ms;
      if (!r.is_ok() || !ops.status().is_ok()) {
        std::printf("STEP ERROR: %s %s\n", r.status().message().c_str(),
                    ops.status().message().c_str());
        return 1;
      }
    }
    const double wall_ms = seconds_since(t) * 1e3 / steps;
    std::printf("| batch %d | %s | %.3f | %.0f | %.0f%% | %.0f |\n", B, graphs ? "yes" : "no",
                wall_ms, B * 1e3 / wall_ms, 100.0 * floor_ms / wall_ms,
                (wall_ms - gpu_ms / steps) * 1e3);
  }
  std::printf("\n");
  return 0;
}

}  // namespace llmserve::bench
