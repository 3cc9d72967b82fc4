// CudaOps: the parts that run without a GPU (graph buckets, KV-memory arithmetic, clean failure
// without a device) and, with one, whole steps of a model against the CPU backend: the first
// forward's logits, 32 greedy tokens, and CUDA-graph replay against eager execution.
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

TEST(CudaOpsNoDevice, DecodeGraphBuckets) {
  EXPECT_EQ(decode_graph_buckets(1), (std::vector<int>{1}));
  EXPECT_EQ(decode_graph_buckets(6), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(decode_graph_buckets(100),
            (std::vector<int>{1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 100}));
  const auto b = decode_graph_buckets(256);
  EXPECT_EQ(decode_graph_bucket(b, 1), 1);
  EXPECT_EQ(decode_graph_bucket(b, 3), 4);
  EXPECT_EQ(decode_graph_bucket(b, 65), 80);
  EXPECT_EQ(decode_graph_bucket(b, 256), 256);
  EXPECT_EQ(decode_graph_bucket(b, 257), 0);
}

TEST(CudaOpsNoDevice, KvMemoryPlanArithmetic) {
  const uint64_t GiB = 1ull << 30;
  auto plan = plan_kv_blocks(80 * GiB, 20 * GiB, 0.9, 2u << 20);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  EXPECT_EQ(plan->num_blocks, (72 * 1024 - 20 * 1024) / 2);
  EXPECT_NE(plan->arithmetic.find("0.900"), std::string::npos) << plan->arithmetic;
  EXPECT_FALSE(plan_kv_blocks(80 * GiB, 79 * GiB, 0.9, 1024).is_ok());
  EXPECT_FALSE(plan_kv_blocks(80 * GiB, 0, 1.5, 1024).is_ok());
  EXPECT_FALSE(plan_kv_blocks(80 * GiB, 0, 0.5, 0).is_ok());
}

TEST(CudaOpsNoDevice, CreateFailsCleanlyWithoutDevice) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  auto ops = CudaOps::create(CudaOpsOptions{});
  ASSERT_FALSE(ops.is_ok());
  EXPECT_EQ(ops.status().code(), StatusCode::kUnavailable);
}

// One backend with its graph over `model`.
struct Backend {
  std::unique_ptr<Ops> ops;
  std::unique_ptr<LlamaGraph> graph;
};

constexpr int kBlocksPerSeq = 8;  // 128 tokens per request

Backend make_backend(const LoadedModel& model, bool cuda, int num_seqs) {
  Backend b;
  if (cuda) {
    CudaOpsOptions o;
    o.max_tokens = 256;
    o.max_samples = 16;
    o.max_num_seqs = 16;
    o.max_model_len = kBlocksPerSeq * 16;
    auto ops = CudaOps::create(o);
    EXPECT_TRUE(ops.is_ok()) << ops.status().message();
    if (!ops.is_ok()) return b;
    b.ops = std::move(ops.value());
  } else {
    b.ops = std::make_unique<CpuOps>(2);
  }
  const ModelConfig& c = model.config();
  KvCacheSpec spec{c.num_layers, static_cast<int64_t>(num_seqs) * kBlocksPerSeq,
                   static_cast<int>(c.num_kv_heads), 16, static_cast<int>(c.head_dim)};
  EXPECT_TRUE(b.ops->alloc_kv_cache(spec).is_ok());
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

TEST(CudaOpsModel, GraphReplayEqualsEager) {
  LLMSERVE_REQUIRE_CUDA();
  std::string which;
  auto model = test_model(&which);
  ASSERT_NE(model, nullptr);
  Backend gpu = make_backend(*model, true, 3);
  ASSERT_TRUE(gpu.graph);
  auto& ops = static_cast<CudaOps&>(*gpu.ops);
  // Prefill three requests of different lengths, then decode them together (bucket 4: padded).
  StepBatch pre;
  pre.blocks_per_seq = kBlocksPerSeq;
  const std::vector<int> lens = {5, 17, 33};
  for (int r = 0; r < 3; ++r) {
    std::vector<int32_t> p;
    for (int i = 0; i < lens[static_cast<size_t>(r)]; ++i) p.push_back((r * 101 + i * 7 + 3) % 900);
    pre.add(r, p, 0);
  }
  ASSERT_TRUE(gpu.graph->forward(pre.view()).is_ok());
  auto decode = [&](bool graphs) {
    ops.set_cuda_graphs(graphs);
    StepBatch d;
    d.blocks_per_seq = kBlocksPerSeq;
    for (int r = 0; r < 3; ++r)
      d.add(r, {static_cast<int32_t>(10 + r)}, lens[static_cast<size_t>(r)]);
    auto l = gpu.graph->forward(d.view());
    EXPECT_TRUE(l.is_ok()) << l.status().message();
    EXPECT_TRUE(ops.status().is_ok()) << ops.status().message();
    return l.is_ok() ? std::vector<float>(l->begin(), l->end()) : std::vector<float>();
  };
  // The same step (same slots) three times: eager, captured, replayed.
  const auto eager = decode(false);
  const auto captured = decode(true);
  EXPECT_EQ(ops.num_decode_graphs(), 1u);
  const auto replayed = decode(true);
  ASSERT_EQ(eager.size(), captured.size());
  ASSERT_EQ(eager.size(), replayed.size());
  EXPECT_LT(rel_diff(captured, eager), 1e-3) << "CUDA graph capture run differs from eager";
  EXPECT_LT(rel_diff(replayed, eager), 1e-3) << "CUDA graph replay differs from eager";
  EXPECT_EQ(captured, replayed) << "two replays of the same graph differ";
}

}  // namespace
}  // namespace llmserve
