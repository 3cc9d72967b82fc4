// CudaOps: the parts that run without a GPU (graph buckets, KV-memory arithmetic, clean failure
// without a device) and, with one, whole steps of a model against the CPU backend: the first
// forward's logits, 32 greedy tokens, CUDA-graph replay against eager execution, and the same
// with int8 / fp8 KV caches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "engine/model/dummy_model.h"
#include "engine/model/llama_graph.h"
#include "engine/runner/cpu_ops.h"
#include "engine/runner/cuda/cuda_ops.h"
#include "tests/unit/cuda/cuda_test_util.h"
#include "tests/unit/cuda/step_batch.h"

namespace llmserve {
namespace {

using cuda_test::StepBatch;

TEST(CudaOpsNoDevice, KvMemoryPlanArithmetic) {
  const uint64_t GiB = 1ull << 30;
  auto plan = plan_kv_blocks(80 * GiB, 20 * GiB, 0.9, 2u << 20);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  EXPECT_EQ(plan->num_blocks, (72 * 1024 - 20 * 1024) / 2);
  EXPECT_NE(plan->arithmetic.find("0.900"), std::string::npos) << plan->arithmetic;
  EXPECT_FALSE(plan_kv_blocks(80 * GiB, 79 * GiB, 0.9, 1024).is_ok());
  EXPECT_FALSE(plan_kv_blocks(80 * GiB, 0, 1.5, 1024).is_ok());
  EXPECT_FALSE(plan_kv_blocks(80 * GiB, 0, 0.5, 0).is_ok());
  // Another daemon holds most of the device: the plan takes what is free, and says so.
  auto shared = plan_kv_blocks(80 * GiB, 2 * GiB, 0.3, 2u << 20, 10 * GiB);
  ASSERT_TRUE(shared.is_ok()) << shared.status().message();
  EXPECT_EQ(shared->num_blocks, 10 * 1024 / 2);
  EXPECT_NE(shared->arithmetic.find("capped"), std::string::npos) << shared->arithmetic;
  EXPECT_FALSE(plan_kv_blocks(80 * GiB, 2 * GiB, 0.3, 2u << 20, 1u << 20).is_ok());
}

TEST(CudaOpsNoDevice, CreateFailsCleanlyWithoutDevice) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  CudaOpsOptions o;
  o.num_heads = 8;
  auto ops = CudaOps::create(o);
  ASSERT_FALSE(ops.is_ok());
  EXPECT_EQ(ops.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(ops.status().message().find("no CUDA device"), std::string::npos)
      << ops.status().message();
}

TensorView bf16_matrix(const std::string& name, const std::vector<uint16_t>& data, int64_t rows,
                       int64_t cols) {
  TensorView t;
  t.name = name;
  t.type = kernels::DType::BF16;
  t.shape = {rows, cols};
  t.data = reinterpret_cast<const std::byte*>(data.data());
  t.nbytes = data.size() * 2;
  return t;
}

TensorView f32_vector(const std::string& name, const std::vector<float>& data) {
  TensorView t;
  t.name = name;
  t.type = kernels::DType::F32;
  t.shape = {static_cast<int64_t>(data.size())};
  t.data = reinterpret_cast<const std::byte*>(data.data());
  t.nbytes = data.size() * 4;
  return t;
}

// q / k / v with biases (qwen2) as one fused GEMM with cuBLASLt's bias epilogue, and one
// unfused matmul with a bias, against a double-precision reference over the same bf16 values.
TEST(CudaOpsKernels, FusedAndBiasedMatmulsMatchReference) {
  LLMSERVE_REQUIRE_CUDA();
  CudaOpsOptions o;
  o.num_heads = 2;
  o.max_tokens = 8;
  o.max_samples = 8;
  o.max_num_seqs = 8;
  auto made = CudaOps::create(o);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  CudaOps& ops = **made;
  const int64_t M = 5, K = 96;
  const std::vector<int64_t> N = {128, 64, 64};
  std::vector<std::vector<uint16_t>> w;
  std::vector<std::vector<float>> b;
  std::vector<TensorView> wt, bt;
  for (size_t i = 0; i < N.size(); ++i) {
    w.push_back(cuda_test::to_bf16(cuda_test::random_floats(N[i] * K, 20 + i)));
    b.push_back(cuda_test::random_floats(N[i], 30 + i));
  }
  for (size_t i = 0; i < N.size(); ++i) {
    wt.push_back(bf16_matrix("w" + std::to_string(i), w[i], N[i], K));
    bt.push_back(f32_vector("b" + std::to_string(i), b[i]));
  }
  const TensorView* wp[] = {&wt[0], &wt[1], &wt[2]};
  const TensorView* bp[] = {&bt[0], &bt[1], &bt[2]};
  auto ws = ops.prepare_fused(wp);
  auto bs = ops.prepare_fused(bp);
  ASSERT_TRUE(ws.is_ok() && bs.is_ok());
  // x as the CUDA backend's GEMM input: bf16 rows with the f32 row pitch (2 K elements).
  const auto x = cuda_test::random_floats(M * K, 40);
  std::vector<uint16_t> x16(static_cast<size_t>(M * 2 * K), 0);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < K; ++c) x16[r * 2 * K + c] = kernels::fp32_to_bf16(x[r * K + c]);
  auto dx = ops.alloc_activation(M * K);
  ASSERT_TRUE(dx.is_ok());
  ASSERT_EQ(cudaMemcpy(*dx, x16.data(), x16.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<float*> ys;
  for (int64_t n : N) ys.push_back(ops.alloc_activation(M * n).value());
  const Weight* wv[] = {&(*ws)[0], &(*ws)[1], &(*ws)[2]};
  const Weight* bv[] = {&(*bs)[0], &(*bs)[1], &(*bs)[2]};
  ops.matmul_multi(*dx, M, wv, bv, ys);
  ASSERT_EQ(cudaStreamSynchronize(ops.stream()), cudaSuccess);
  ASSERT_TRUE(ops.status().is_ok()) << ops.status().message();
  EXPECT_EQ(ops.fused_views().size(), 3u) << "q / k / v did not run as one fused GEMM";
  for (size_t i = 0; i < N.size(); ++i) {
    std::vector<double> want(static_cast<size_t>(M * N[i]));
    for (int64_t r = 0; r < M; ++r) {
      for (int64_t n = 0; n < N[i]; ++n) {
        double acc = b[i][n];
        for (int64_t c = 0; c < K; ++c) {
          acc += static_cast<double>(kernels::bf16_to_fp32(x16[r * 2 * K + c])) *
                 kernels::bf16_to_fp32(w[i][n * K + c]);
        }
        want[r * N[i] + n] = acc;
      }
    }
    const FusedViews::View v = ops.fused_views().resolve(ys[i], N[i]);
    std::vector<float> rows(static_cast<size_t>(M * v.row_stride));
    ASSERT_EQ(cudaMemcpy(rows.data(), v.data, rows.size() * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
    std::vector<float> got(want.size()), wantf(want.begin(), want.end());
    for (int64_t r = 0; r < M; ++r)
      for (int64_t n = 0; n < N[i]; ++n) got[r * N[i] + n] = rows[r * v.row_stride + n];
    EXPECT_TRUE(
        cuda_test::near_all("fused GEMM output " + std::to_string(i), got, wantf, 1e-4f, 1e-4f));
  }
  // One weight with its bias through matmul (no fusion): the same epilogue path.
  float* y = ops.alloc_activation(M * N[0]).value();
  ops.matmul(*dx, M, (*ws)[0], &(*bs)[0], y);
  ASSERT_EQ(cudaStreamSynchronize(ops.stream()), cudaSuccess);
  std::vector<float> got(static_cast<size_t>(M * N[0]));
  ASSERT_EQ(cudaMemcpy(got.data(), y, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_TRUE(ops.status().is_ok()) << ops.status().message();
  const FusedViews::View v0 = ops.fused_views().resolve(ys[0], N[0]);
  std::vector<float> fused(static_cast<size_t>(M * v0.row_stride));
  ASSERT_EQ(cudaMemcpy(fused.data(), v0.data, fused.size() * 4, cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t n = 0; n < N[0]; ++n)
      EXPECT_NEAR(got[r * N[0] + n], fused[r * v0.row_stride + n], 1e-4f) << r << "," << n;
}

// One backend with its graph over `model`.
struct Backend {
  std::unique_ptr<Ops> ops;
  std::unique_ptr<LlamaGraph> graph;
};

constexpr int kBlocksPerSeq = 8;  // 128 tokens per request

Backend make_backend(const LoadedModel& model, bool cuda, int num_seqs,
                     kernels::KvDtype dtype = kernels::KvDtype::kF16,
                     int blocks_per_seq = kBlocksPerSeq) {
  Backend b;
  if (cuda) {
    CudaOpsOptions o;
    o.num_heads = static_cast<int>(model.config().num_heads);
    o.max_tokens = 256;
    o.max_samples = 16;
    o.max_num_seqs = 16;
    o.max_model_len = blocks_per_seq * 16;
    auto ops = CudaOps::create(o);
    EXPECT_TRUE(ops.is_ok()) << ops.status().message();
    if (!ops.is_ok()) return b;
    b.ops = std::move(ops.value());
  } else {
    b.ops = std::make_unique<CpuOps>(2);
  }
  const ModelConfig& c = model.config();
  KvCacheSpec spec{c.num_layers,
                   static_cast<int64_t>(num_seqs) * blocks_per_seq,
                   static_cast<int>(c.num_kv_heads),
                   16,
                   static_cast<int>(c.head_dim),
                   dtype};
  const Status st = b.ops->alloc_kv_cache(spec);
  EXPECT_TRUE(st.is_ok()) << st.message();
  auto g = LlamaGraph::create(model, *b.ops, 256, 16);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  if (g.is_ok()) b.graph = std::move(g.value());
  return b;
}

std::unique_ptr<LoadedModel> test_model(std::string* which) {
  if (const char* p = std::getenv("LLMSERVE_TEST_MODEL"); p != nullptr && *p != '\0') {
    *which = p;
    auto m = load_model(p);
    return m.is_ok() ? std::move(m.value()) : nullptr;
  }
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto path = write_dummy_gguf("tiny", dir, 7);
  if (!path.is_ok()) return nullptr;
  *which = "dummy tiny";
  auto m = load_model(path.value());
  return m.is_ok() ? std::move(m.value()) : nullptr;
}

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// Largest |a - b| relative to the spread of b.
double rel_diff(std::span<const float> a, std::span<const float> b) {
  double d = 0, lo = 1e30, hi = -1e30;
  for (size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
    lo = std::min<double>(lo, b[i]);
    hi = std::max<double>(hi, b[i]);
  }
  return d / std::max(hi - lo, 1e-9);
}

TEST(CudaOpsModel, ForwardAnd32GreedyTokensMatchCpu) {
  LLMSERVE_REQUIRE_CUDA();
  std::string which;
  auto model = test_model(&which);
  ASSERT_NE(model, nullptr);
  Backend cpu = make_backend(*model, false, 1), gpu = make_backend(*model, true, 1);
  ASSERT_TRUE(cpu.graph && gpu.graph);
  const int64_t V = model->config().vocab_size;
  std::vector<int32_t> prompt;
  for (int i = 0; i < 21; ++i) prompt.push_back(static_cast<int32_t>((i * 37 + 11) % V));
  std::vector<int32_t> out_cpu, out_gpu;
  int32_t first_divergence = -1;
  double worst = 0;
  int cached = 0;
  std::vector<int32_t> next = prompt;
  for (int step = 0; step < 32; ++step) {
    StepBatch sb;
    sb.blocks_per_seq = kBlocksPerSeq;
    sb.add(0, next, cached);
    auto lc = cpu.graph->forward(sb.view());
    ASSERT_TRUE(lc.is_ok()) << lc.status().message();
    std::vector<float> logits_cpu(lc->begin(), lc->end());
    auto lg = gpu.graph->forward(sb.view());
    ASSERT_TRUE(lg.is_ok()) << lg.status().message();
    ASSERT_TRUE(static_cast<CudaOps&>(*gpu.ops).status().is_ok())
        << static_cast<CudaOps&>(*gpu.ops).status().message();
    const double d = rel_diff(*lg, logits_cpu);
    worst = std::max(worst, d);
    if (step == 0) {
      EXPECT_LT(d, 2e-2) << which << ": first forward logits differ from the CPU backend";
    }
    out_cpu.push_back(argmax(logits_cpu));
    out_gpu.push_back(argmax(*lg));
    if (first_divergence < 0 && out_cpu.back() != out_gpu.back()) first_divergence = step;
    cached += static_cast<int>(next.size());
    next = {out_cpu.back()};  // both follow the CPU tokens so later steps stay comparable
  }
  EXPECT_EQ(first_divergence, -1) << which << ": greedy token " << first_divergence
                                  << " differs (worst logit diff / spread " << worst << ")";
  std::printf("[ model %s ] 32 greedy tokens, worst logit diff / spread %.3g\n", which.c_str(),
              worst);
}

// Request r's prompt for the multi-request tests: lengths cross block edges.
std::vector<int32_t> prompt_of(int r, int len) {
  std::vector<int32_t> p;
  for (int i = 0; i < len; ++i) p.push_back((r * 101 + i * 7 + 3) % 900);
  return p;
}

std::vector<float> copy_of(const Result<std::span<const float>>& l) {
  return l.is_ok() ? std::vector<float>(l->begin(), l->end()) : std::vector<float>();
}

// |a - b| / |b| with both centered (minus their means): the oracle's logit-row metric.
double centered_rel_l2(std::span<const float> a, std::span<const float> b) {
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= static_cast<double>(a.size());
  mb /= static_cast<double>(b.size());
  double d2 = 0, b2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i] - ma, y = b[i] - mb;
    d2 += (x - y) * (x - y);
    b2 += y * y;
  }
  return std::sqrt(d2 / std::max(b2, 1e-30));
}

// A 700-token prompt in chunks (256 and 100 tokens: several query and key tiles, pages far from
// the first), then decodes: each chunk's last logit row and each decode against the CPU backend.
TEST(CudaOpsModel, LongPromptInChunksMatchesCpu) {
  LLMSERVE_REQUIRE_CUDA();
  std::string which;
  auto model = test_model(&which);
  ASSERT_NE(model, nullptr);
  constexpr int kBlocks = 48, kLen = 700;
  const std::vector<int32_t> prompt = prompt_of(5, kLen);
  for (int chunk : {256, 100}) {
    Backend cpu = make_backend(*model, false, 1, kernels::KvDtype::kF16, kBlocks);
    Backend gpu = make_backend(*model, true, 1, kernels::KvDtype::kF16, kBlocks);
    ASSERT_TRUE(cpu.graph && gpu.graph);
    double worst = 0;
    int worst_at = -1;
    int cached = 0;
    std::vector<int32_t> next;
    while (cached < kLen + 8) {
      next = cached < kLen ? std::vector<int32_t>(prompt.begin() + cached,
                                                  prompt.begin() + std::min(kLen, cached + chunk))
                           : next;
      StepBatch sb;
      sb.blocks_per_seq = kBlocks;
      sb.add(0, next, cached);
      const auto lc = copy_of(cpu.graph->forward(sb.view()));
      const auto lg = copy_of(gpu.graph->forward(sb.view()));
      ASSERT_FALSE(lc.empty() || lg.empty()) << which << ": chunk " << chunk << " at " << cached;
      const double d = centered_rel_l2(lg, lc);
      if (!(d <= worst)) worst = d, worst_at = cached + static_cast<int>(next.size()) - 1;
      cached += static_cast<int>(next.size());
      next = {argmax(lc)};
    }
    EXPECT_LT(worst, 2.5e-2) << which << ": chunks of " << chunk << ", worst logit row at position "
                             << worst_at;
    std::printf("[ model %s ] %d-token prompt in chunks of %d: worst centered rel L2 %.3g at %d\n",
                which.c_str(), kLen, chunk, worst, worst_at);
    EXPECT_TRUE(static_cast<CudaOps&>(*gpu.ops).status().is_ok());
  }
}

TEST(CudaOpsModel, MixedPrefillAndDecodeStepMatchesCpu) {
  LLMSERVE_REQUIRE_CUDA();
  std::string which;
  auto model = test_model(&which);
  ASSERT_NE(model, nullptr);
  Backend cpu = make_backend(*model, false, 4), gpu = make_backend(*model, true, 4);
  ASSERT_TRUE(cpu.graph && gpu.graph);
  StepBatch pre;
  pre.blocks_per_seq = kBlocksPerSeq;
  pre.add(0, prompt_of(0, 17), 0);
  pre.add(1, prompt_of(1, 40), 0);
  pre.add(2, prompt_of(2, 20), 0);  // its chunk continues below
  const auto pc = copy_of(cpu.graph->forward(pre.view()));
  const auto pg = copy_of(gpu.graph->forward(pre.view()));
  ASSERT_FALSE(pc.empty());
  EXPECT_LT(rel_diff(pg, pc), 2e-2) << which << ": three-prefill step";
  // Two decodes, a chunked prefill continuing after 20 cached tokens, and a new prefill.
  StepBatch mixed;
  mixed.blocks_per_seq = kBlocksPerSeq;
  mixed.add(0, {5}, 17);
  mixed.add(1, {6}, 40);
  mixed.add(2, prompt_of(7, 30), 20);
  mixed.add(3, prompt_of(3, 9), 0);
  const auto mc = copy_of(cpu.graph->forward(mixed.view()));
  const auto mg = copy_of(gpu.graph->forward(mixed.view()));
  ASSERT_EQ(mc.size(), mg.size());
  EXPECT_LT(rel_diff(mg, mc), 2e-2) << which << ": mixed prefill + decode step";
  EXPECT_TRUE(static_cast<CudaOps&>(*gpu.ops).status().is_ok());
}

TEST(CudaOpsModel, EveryGraphBucketEqualsEager) {
  LLMSERVE_REQUIRE_CUDA();
  std::string which;
  auto model = test_model(&which);
  ASSERT_NE(model, nullptr);
  constexpr int kSeqs = 16;
  Backend gpu = make_backend(*model, true, kSeqs);
  ASSERT_TRUE(gpu.graph);
  auto& ops = static_cast<CudaOps&>(*gpu.ops);
  // The prompts (3 .. 108 tokens, 888 in all) in prefill steps of at most 256 tokens.
  std::vector<int> lens;
  for (int r = 0; r < kSeqs; ++r) lens.push_back(3 + 7 * r);
  for (int r = 0; r < kSeqs;) {
    StepBatch pre;
    pre.blocks_per_seq = kBlocksPerSeq;
    for (int used = 0; r < kSeqs && used + lens[static_cast<size_t>(r)] <= 256; ++r) {
      used += lens[static_cast<size_t>(r)];
      pre.add(r, prompt_of(r, lens[static_cast<size_t>(r)]), 0);
    }
    const auto st = gpu.graph->forward(pre.view());
    ASSERT_TRUE(st.is_ok()) << st.status().message();
  }
  auto decode = [&](int n) {
    StepBatch d;
    d.blocks_per_seq = kBlocksPerSeq;
    for (int r = 0; r < n; ++r)
      d.add(r, {static_cast<int32_t>(10 + r)}, lens[static_cast<size_t>(r)]);
    auto l = copy_of(gpu.graph->forward(d.view()));
    EXPECT_TRUE(ops.status().is_ok()) << ops.status().message();
    return l;
  };
  ASSERT_FALSE(ops.graph_buckets().empty());
  for (int bucket : ops.graph_buckets()) {
    // The same step (same slots) eager, captured, replayed, and replayed for a smaller batch.
    ops.set_cuda_graphs(false);
    const auto eager = decode(bucket);
    ops.set_cuda_graphs(true);
    ops.capture_next_step();
    const auto captured = decode(bucket);
    const auto replayed = decode(bucket);
    ASSERT_EQ(eager.size(), replayed.size());
    EXPECT_LT(rel_diff(captured, eager), 1e-3) << "bucket " << bucket << ": capture run";
    EXPECT_LT(rel_diff(replayed, eager), 1e-3) << "bucket " << bucket << ": replay";
    EXPECT_EQ(captured, replayed) << "bucket " << bucket << ": two runs of one graph differ";
    if (bucket > 1) {  // a padded replay: the first bucket - 1 requests
      ops.set_cuda_graphs(false);
      const auto small_eager = decode(bucket - 1);
      ops.set_cuda_graphs(true);
      const auto padded = decode(bucket - 1);
      EXPECT_LT(rel_diff(padded, small_eager), 1e-3) << "bucket " << bucket << " padded";
    }
  }
  EXPECT_EQ(ops.num_decode_graphs(), ops.graph_buckets().size());
}

// int8 and fp8 (e4m3) KV caches: the bytes CudaOps reports (elements plus f16 scales: what
// plan_kv_cache divides the budget by), prefill and mixed steps against the CPU backend (int8:
// the CPU's int8 cache; fp8, CUDA-only: the CPU's f16 cache, so the bound holds the e4m3 error),
// and decode graphs captured, replayed and padded equal to eager steps.
TEST(CudaOpsModel, QuantizedKvCacheStepsAndGraphs) {
  LLMSERVE_REQUIRE_CUDA();
  using kernels::KvDtype;
  std::string which;
  auto model = test_model(&which);
  ASSERT_NE(model, nullptr);
  const ModelConfig& c = model->config();
  constexpr int kSeqs = 4;
  for (KvDtype dt : {KvDtype::kInt8, KvDtype::kFp8}) {
    const std::string name = which + " " + kernels::kv_dtype_name(dt) + " KV cache";
    // The CPU's int8 cache against its f16 one: 0.007 on the dummy model; e4m3 errs ~9x int8.
    const double tol = dt == KvDtype::kInt8 ? 3e-2 : 1.5e-1;
    Backend gpu = make_backend(*model, true, kSeqs, dt);
    Backend cpu = make_backend(*model, false, kSeqs, dt == KvDtype::kInt8 ? dt : KvDtype::kF16);
    ASSERT_TRUE(cpu.graph && gpu.graph) << name;
    auto& ops = static_cast<CudaOps&>(*gpu.ops);
    EXPECT_EQ(ops.kv_cache_bytes(), 2ull * static_cast<uint64_t>(c.num_layers) * kSeqs *
                                        kBlocksPerSeq * static_cast<uint64_t>(c.num_kv_heads) * 16 *
                                        static_cast<uint64_t>(c.head_dim + 2))
        << name;
    StepBatch pre;
    pre.blocks_per_seq = kBlocksPerSeq;
    std::vector<int> lens = {17, 40, 20, 33};
    for (int r = 0; r < kSeqs; ++r) pre.add(r, prompt_of(r, lens[static_cast<size_t>(r)]), 0);
    const auto pc = copy_of(cpu.graph->forward(pre.view()));
    const auto pg = copy_of(gpu.graph->forward(pre.view()));
    ASSERT_FALSE(pc.empty()) << name;
    EXPECT_LT(rel_diff(pg, pc), tol) << name << ": four-prefill step";
    StepBatch mixed;
    mixed.blocks_per_seq = kBlocksPerSeq;
    mixed.add(0, {5}, 17);
    mixed.add(1, {6}, 40);
    mixed.add(2, prompt_of(7, 30), 20);
    mixed.add(3, {7}, 33);
    const auto mc = copy_of(cpu.graph->forward(mixed.view()));
    const auto mg = copy_of(gpu.graph->forward(mixed.view()));
    ASSERT_EQ(mc.size(), mg.size()) << name;
    EXPECT_LT(rel_diff(mg, mc), tol) << name << ": mixed prefill + decode step";
    EXPECT_TRUE(ops.status().is_ok()) << ops.status().message();
    lens = {18, 41, 50, 34};
    auto decode = [&](int n) {
      StepBatch d;
      d.blocks_per_seq = kBlocksPerSeq;
      for (int r = 0; r < n; ++r) {
        d.add(r, {static_cast<int32_t>(10 + r)}, lens[static_cast<size_t>(r)]);
      }
      auto l = copy_of(gpu.graph->forward(d.view()));
      EXPECT_TRUE(ops.status().is_ok()) << ops.status().message();
      return l;
    };
    for (int bucket : ops.graph_buckets()) {
      if (bucket > kSeqs) break;
      ops.set_cuda_graphs(false);
      const auto eager = decode(bucket);
      ops.set_cuda_graphs(true);
      ops.capture_next_step();
      const auto captured = decode(bucket);
      const auto replayed = decode(bucket);
      ASSERT_EQ(eager.size(), replayed.size()) << name;
      EXPECT_LT(rel_diff(replayed, eager), 1e-3) << name << " bucket " << bucket << ": replay";
      EXPECT_EQ(captured, replayed) << name << " bucket " << bucket << ": two runs differ";
      if (bucket > 1) {
        ops.set_cuda_graphs(false);
        const auto small_eager = decode(bucket - 1);
        ops.set_cuda_graphs(true);
        EXPECT_LT(rel_diff(decode(bucket - 1), small_eager), 1e-3)
            << name << " bucket " << bucket << " padded";
      }
    }
  }
}

}  // namespace
}  // namespace llmserve
