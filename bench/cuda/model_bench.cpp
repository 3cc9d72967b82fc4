// Decode throughput of a dummy-weights model on CudaOps at batch 1 / 8 / 64 / 256 (kContext
// tokens of context each; CUDA graphs, and batch 1 eager too), against the weight-read floor
// (weight bytes / copy bandwidth) and the bytes floor (weights + the KV cache read).
//
// CPU gap: the GPU time of a step is measured with its work queued behind a side-stream copy of
// a few milliseconds (the compute stream waits on an event after it), so the host has enqueued
// the whole step before the GPU starts it: event(copy done) -> event(step done) is the step's
// GPU time alone. The gap of a step is then its synchronous wall time (enqueue, run, sync: what
// the engine loop pays per step) minus the median GPU time: the GPU's idle time per step.
// gpu_ms_exact is false when a step took longer to enqueue than the copy ran (it blocked on the
// GPU inside, so its GPU time includes idle time and the gap reads low).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/cuda/bench_util.h"
#include "engine/model/dummy_model.h"
#include "engine/model/llama_graph.h"
#include "engine/model/quantize_model.h"
#include "engine/runner/cuda/cuda_ops.h"

namespace llmserve::bench {
namespace {

constexpr int kContext = 512, kMaxSeqs = 256, kBlockSize = 16;
constexpr int kBlocksPerSeq = (kContext + 64) / kBlockSize;
constexpr int kGpuSteps = 10, kWallSteps = 40;
constexpr size_t kBlockerBytes = 1ull << 30;  // copied 4x: ~2 ms of HBM traffic on an H200

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// B decode requests at position kContext - 1; request b owns blocks [b * kBlocksPerSeq, ...).
struct DecodeBatch {
  std::vector<int32_t> tok, pos, qs, seq, slots, samples, bt;
  std::vector<uint8_t> pre;
  DecodeBatch(int B, int64_t vocab)
      : tok(B),
        pos(B, kContext - 1),
        qs(B + 1),
        seq(B, kContext),
        slots(B),
        samples(B),
        bt(static_cast<size_t>(B) * kBlocksPerSeq),
        pre(B, 0) {
    for (int b = 0; b < B; ++b) {
      tok[b] = static_cast<int32_t>((b * 131) % vocab);
      qs[b + 1] = b + 1;
      samples[b] = b;
      slots[b] = (b * kBlocksPerSeq + (kContext - 1) / kBlockSize) * kBlockSize +
                 (kContext - 1) % kBlockSize;
      for (int j = 0; j < kBlocksPerSeq; ++j)
        bt[static_cast<size_t>(b) * kBlocksPerSeq + j] = b * kBlocksPerSeq + j;
    }
  }
  ForwardBatch view() const {
    return ForwardBatch{tok,           pos,   qs,      seq, bt,
                        kBlocksPerSeq, slots, samples, pre, static_cast<int64_t>(tok.size())};
  }
};

struct Timing {
  double wall_ms = 0, gpu_ms = 0, gap_us_median = 0, gap_us_p90 = 0;
  bool gpu_exact = true;  // every step was enqueued before the blocking copy ended
};

// Runs one step of fb; false (printing why) on an error.
bool step(LlamaGraph& graph, CudaOps& ops, const ForwardBatch& fb) {
  auto r = graph.forward_logits(fb);
  if (r.is_ok() && ops.status().is_ok()) return true;
  std::printf("STEP ERROR: %s %s\n", r.status().message().c_str(), ops.status().message().c_str());
  return false;
}

bool time_decode(LlamaGraph& graph, CudaOps& ops, const ForwardBatch& fb, void* blk_a, void* blk_b,
                 cudaStream_t side, Timing* t) {
  cudaEvent_t begin, copied, done;
  cudaEventCreate(&begin);
  cudaEventCreate(&copied);
  cudaEventCreate(&done);
  std::vector<double> gpu, wall;
  bool ok = true;
  for (int i = 0; i < kGpuSteps && ok; ++i) {
    cudaEventRecord(begin, side);
    for (int c = 0; c < 4; ++c)
      cudaMemcpyAsync(c % 2 ? blk_a : blk_b, c % 2 ? blk_b : blk_a, kBlockerBytes,
                      cudaMemcpyDeviceToDevice, side);
    cudaEventRecord(copied, side);
    cudaStreamWaitEvent(ops.stream(), copied, 0);
    const auto t0 = std::chrono::steady_clock::now();
    ok = step(graph, ops, fb);
    const double enqueue_ms = seconds_since(t0) * 1e3;
    cudaEventRecord(done, ops.stream());
    cudaEventSynchronize(done);
    float ms = 0, copy_ms = 0;
    cudaEventElapsedTime(&ms, copied, done);
    cudaEventElapsedTime(&copy_ms, begin, copied);
    gpu.push_back(ms);
    t->gpu_exact = t->gpu_exact && enqueue_ms < copy_ms;
  }
  for (int i = 0; i < kWallSteps && ok; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ok = step(graph, ops, fb);
    cudaStreamSynchronize(ops.stream());
    wall.push_back(seconds_since(t0) * 1e3);
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(copied);
  cudaEventDestroy(done);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    std::printf("CUDA ERROR in the decode benchmark: %s\n", cudaGetErrorString(e));
    return false;
  }
  if (!ok) return false;
  t->gpu_ms = quantile(gpu, 0.5);
  t->wall_ms = quantile(wall, 0.5);
  std::vector<double> gaps;
  for (double w : wall) gaps.push_back(std::max(0.0, (w - t->gpu_ms) * 1e3));
  t->gap_us_median = quantile(gaps, 0.5);
  t->gap_us_p90 = quantile(gaps, 0.9);
  return true;
}

}  // namespace

int run_model_benchmarks(const char* preset_name, double bw, bool fp8) {
  const std::string label = std::string(preset_name) + (fp8 ? "-fp8" : "");
  const char* preset = label.c_str();
  auto t0 = std::chrono::steady_clock::now();
  auto path = write_dummy_gguf(preset_name, "/tmp", 1);
  if (!path.is_ok()) return std::printf("dummy model: %s\n", path.status().message().c_str()), 1;
  auto model = load_model(path.value());
  if (!model.is_ok()) return std::printf("load: %s\n", model.status().message().c_str()), 1;
  const ModelConfig& c = (*model)->config();
  std::printf("Model %s (dummy weights): written and mapped in %.1f s\n", preset,
              seconds_since(t0));
  if (fp8) {
    t0 = std::chrono::steady_clock::now();
    kernels::ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    auto q = quantize_model_weights(**model, kernels::DType::F8_E4M3, pool);
    if (!q.is_ok()) return std::printf("fp8: %s\n", q.status().message().c_str()), 1;
    std::printf("Quantized to FP8 (128 x 128 blocks) in %.1f s\n", seconds_since(t0));
  }
  CudaOpsOptions o;
  o.max_tokens = 512;
  o.max_samples = kMaxSeqs;
  o.max_num_seqs = kMaxSeqs;
  o.max_model_len = kBlocksPerSeq * kBlockSize;
  o.num_heads = static_cast<int>(c.num_heads);
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
  std::printf("Weights uploaded (%s) in %.1f s\n", fp8 ? "FP8 matmuls, BF16 embeddings" : "BF16",
              seconds_since(t0));
  // The weight bytes a decode step reads, as parameter_count() x 2 for BF16 before: every tensor
  // at its on-device size (BF16 2 bytes; FP8 1 byte plus its f32 scales).
  double weight_bytes = 0;
  for (const TensorView& t : (*model)->tensors()) {
    weight_bytes += t.type == kernels::DType::F8_E4M3
                        ? static_cast<double>(t.nbytes + t.scales.count(t.rows(), t.cols()) * 4)
                        : static_cast<double>(t.num_elements()) * 2.0;
  }
  const double kv_token_bytes = static_cast<double>(c.kv_bytes_per_token(2));
  const double floor_ms = weight_bytes / (bw * 1e6);
  std::printf(
      "Weight bytes %.2f GB; weight-read floor %.3f ms per step at %.0f GB/s; KV %.0f "
      "bytes per token of context\n\n",
      weight_bytes / 1e9, floor_ms, bw, kv_token_bytes);

  void *blk_a = nullptr, *blk_b = nullptr;
  cudaStream_t side = nullptr;
  if (cudaMalloc(&blk_a, kBlockerBytes) != cudaSuccess ||
      cudaMalloc(&blk_b, kBlockerBytes) != cudaSuccess ||
      cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) {
    return std::printf("blocker buffers: %s\n", cudaGetErrorString(cudaGetLastError())), 1;
  }
  std::printf(
      "| decode (context %d) | graphs | ms/step | GPU ms/step | tok/s | weight-read floor "
      "ms | %% of weight floor | %% of bytes floor | CPU gap us median / p90 |\n",
      kContext);
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  int rc = 0;
  const std::vector<std::pair<int, bool>> runs =
      fp8 ? std::vector<std::pair<int, bool>>{{1, true}, {1, false}, {8, true}, {64, true}}
          : std::vector<std::pair<int, bool>>{
                {1, true}, {1, false}, {8, true}, {64, true}, {256, true}};
  for (const auto& [B, graphs] : runs) {
    const DecodeBatch batch(B, c.vocab_size);
    const ForwardBatch fb = batch.view();
    ops.set_cuda_graphs(graphs);
    if (graphs) ops.capture_next_step();
    bool ok = true;
    for (int i = 0; i < 3 && ok; ++i) ok = step(graph, ops, fb);  // capture + warm-up
    cudaStreamSynchronize(ops.stream());
    Timing t;
    if (!ok || !time_decode(graph, ops, fb, blk_a, blk_b, side, &t)) {
      rc = 1;
      break;
    }
    const double bytes_floor_ms = floor_ms + B * kContext * kv_token_bytes / (bw * 1e6);
    std::printf("| batch %d | %s | %.3f | %.3f | %.0f | %.3f | %.0f%% | %.0f%% | %.0f / %.0f |\n",
                B, graphs ? "yes" : "no", t.wall_ms, t.gpu_ms, B * 1e3 / t.wall_ms, floor_ms,
                100.0 * floor_ms / t.wall_ms, 100.0 * bytes_floor_ms / t.wall_ms, t.gap_us_median,
                t.gap_us_p90);
    std::printf(
        "BENCH {\"kernel\": \"model_decode\", \"preset\": \"%s\", \"batch\": %d, "
        "\"ctx\": %d, \"graphs\": %s, \"ms\": %.4f, \"gpu_ms\": %.4f, \"tok_s\": %.1f, "
        "\"weight_gb\": %.3f, \"floor_ms\": %.4f, \"floor_ratio\": %.4f, "
        "\"bytes_floor_ms\": %.4f, \"gap_us_median\": %.1f, \"gap_us_p90\": %.1f, "
        "\"gpu_ms_exact\": %s, \"graphs_captured\": %zu}\n",
        preset, B, kContext, graphs ? "true" : "false", t.wall_ms, t.gpu_ms, B * 1e3 / t.wall_ms,
        weight_bytes / 1e9, floor_ms, floor_ms / t.wall_ms, bytes_floor_ms, t.gap_us_median,
        t.gap_us_p90, t.gpu_exact ? "true" : "false", ops.num_decode_graphs());
  }
  cudaFree(blk_a);
  cudaFree(blk_b);
  cudaStreamDestroy(side);
  std::printf("\n");
  return rc;
}

}  // namespace llmserve::bench
