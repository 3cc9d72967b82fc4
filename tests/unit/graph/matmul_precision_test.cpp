// engine.cpu_matmul_precision on the CPU backend: with `auto`, the rows of prompt tokens
// (ForwardBatch::prompt_rows, from BatchEntry::num_prompt) go through the one-pass q8 kernels and
// the rows of output tokens (decodes, drafts) through q8x2; each row equals the kernel's own result
// at its precision, bit for bit, whatever the rest of the batch. The LM head, over the gathered
// sampled rows, runs at the output precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/runner/batch_builder.h"
#include "engine/runner/cpu_ops.h"
#include "engine/runner/matmul_precision.h"
#include "engine/runner/model_runner.h"
#include "llmserve/kernels/packed_weight.h"
#include "tests/unit/kernels/kernel_test_util.h"

namespace llmserve {
namespace {

using kernels::ActPrecision;
using kernels::DType;

constexpr int64_t kK = 256, kN = 40;

TEST(MatmulPrecision, ParsesTheConfigValues) {
  const auto a = parse_matmul_precision("auto");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->output, ActPrecision::kQ8x2);
  EXPECT_EQ(a->prompt, ActPrecision::kQ8);
  const auto x2 = parse_matmul_precision("q8x2");
  ASSERT_TRUE(x2.has_value());
  EXPECT_EQ(x2->output, ActPrecision::kQ8x2);
  EXPECT_EQ(x2->prompt, ActPrecision::kQ8x2);
  const auto q8 = parse_matmul_precision("q8");
  ASSERT_TRUE(q8.has_value());
  EXPECT_EQ(q8->output, ActPrecision::kQ8);
  EXPECT_EQ(q8->prompt, ActPrecision::kQ8);
  EXPECT_FALSE(parse_matmul_precision("Q8").has_value());
  EXPECT_FALSE(parse_matmul_precision("").has_value());
}

TEST(MatmulPrecision, ParsesTheSettingWithByFormat) {
  const auto by_format = parse_matmul_precision_setting("by_format");
  ASSERT_TRUE(by_format.is_ok());
  EXPECT_FALSE(by_format->has_value());
  const auto q8 = parse_matmul_precision_setting("q8");
  ASSERT_TRUE(q8.is_ok() && q8->has_value());
  EXPECT_EQ(**q8, MatmulPrecision{ActPrecision::kQ8});
  const auto bad = parse_matmul_precision_setting("fast");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("engine.cpu_matmul_precision"), std::string::npos);
  EXPECT_NE(bad.status().message().find("'fast'"), std::string::npos);
}

TensorView matrix(DType type, size_t nbytes, std::vector<int64_t> shape = {64, 256}) {
  TensorView t;
  t.type = type;
  t.shape = std::move(shape);
  t.nbytes = nbytes;
  return t;
}

TEST(MatmulPrecision, ByFormatFollowsTheQuantizedBytes) {
  const MatmulPrecision one{ActPrecision::kQ8};
  const MatmulPrecision x2{ActPrecision::kQ8x2};
  // A Q4_K_M file: Q4_K and Q6_K matrices, its fallback Q8_0 / Q5_0 ones fewer bytes.
  EXPECT_EQ(matmul_precision_for_weights({matrix(DType::Q4_K, 100), matrix(DType::Q6_K, 50),
                                          matrix(DType::Q8_0, 120), matrix(DType::Q5_0, 20)}),
            one);
  // Mostly Q4_1 (the default model) or Q8_0: two passes.
  EXPECT_EQ(matmul_precision_for_weights({matrix(DType::Q4_1, 200), matrix(DType::Q6_K, 10)}), x2);
  EXPECT_EQ(matmul_precision_for_weights({matrix(DType::Q8_0, 60), matrix(DType::Q5_K, 60)}), x2);
  // Float matrices and vectors do not count.
  EXPECT_EQ(matmul_precision_for_weights({matrix(DType::BF16, 1000), matrix(DType::Q4_K, 1)}), one);
  EXPECT_EQ(matmul_precision_for_weights(
                {matrix(DType::F16, 1000), matrix(DType::F32, 4, {256}), matrix(DType::Q4_0, 2)}),
            x2);
  EXPECT_EQ(matmul_precision_for_weights(
                {matrix(DType::Q8_0, 10, {256}), matrix(DType::Q3_K, 5, {4, 64, 256})}),
            one);
  EXPECT_EQ(matmul_precision_for_weights({matrix(DType::F16, 1000)}), x2);
  EXPECT_EQ(matmul_precision_name(*parse_matmul_precision("auto")), "auto");
  EXPECT_EQ(matmul_precision_name(one), "q8");
  EXPECT_EQ(matmul_precision_name(x2), "q8x2");
  EXPECT_EQ(matmul_precision_name(MatmulPrecision{ActPrecision::kQ8, ActPrecision::kQ8x2}),
            "prompt q8x2 / output q8");
}

// The runner resolves by_format (nullopt) from the file it loads; a fixed setting stays.
TEST(MatmulPrecision, RunnerResolvesByFormatFromTheFile) {
  auto open = [](const std::string& path, std::optional<MatmulPrecision> p) {
    ModelRunnerOptions o;
    o.model_path = path;
    o.kv_cache_bytes = 4ull << 20;
    o.max_tokens_per_step = 16;
    o.max_samples_per_step = 4;
    o.matmul_precision = p;
    return ModelRunner::create(o);
  };
  const std::string kquant = std::string(LLMSERVE_FIXTURES_DIR) + "/tiny_kquant/model.gguf";
  auto k = open(kquant, std::nullopt);
  ASSERT_TRUE(k.is_ok()) << k.status().to_string();
  EXPECT_EQ(matmul_precision_name((*k)->matmul_precision()), "q8");
  auto fixed = open(kquant, MatmulPrecision{ActPrecision::kQ8x2});
  ASSERT_TRUE(fixed.is_ok()) << fixed.status().to_string();
  EXPECT_EQ(matmul_precision_name((*fixed)->matmul_precision()), "q8x2");
  const char* model = std::getenv("LLMSERVE_TEST_MODEL");
  if (model == nullptr || *model == 0) GTEST_SKIP() << "LLMSERVE_TEST_MODEL not set";
  auto q41 = open(model, std::nullopt);
  ASSERT_TRUE(q41.is_ok()) << q41.status().to_string();
  EXPECT_EQ(matmul_precision_name((*q41)->matmul_precision()), "q8x2");
}

// A step of five requests built by BatchBuilder, and which of its rows hold prompt tokens.
struct StepFixture {
  std::vector<int32_t> decode_tokens{5, 6, 7, 8, 9, 10, 11, 12};  // prompt 5 + 3 generated
  std::vector<int32_t> draft_tokens{5, 6, 7, 8, 9, 10};           // prompt 4 + 2 generated
  std::vector<int32_t> drafts{13, 14};
  std::vector<int32_t> recompute{5, 6, 7, 8, 9, 10, 11, 12, 13};  // prompt 6 + 3 generated
  std::vector<int32_t> chunk{20, 21, 22, 23, 24, 25, 26, 27, 28, 29};
  std::vector<int32_t> untold{30, 31, 32, 33};
  std::vector<std::vector<int32_t>> tables;
  std::vector<BatchEntry> entries;
  BatchBuilder builder{16};

  ForwardBatch batch() {
    for (int32_t i = 0; i < 5; ++i) tables.push_back(contiguous_block_table(i, 16, 16));
    BatchEntry decode{decode_tokens, 7, 1, tables[0], true};
    decode.num_prompt = 5;
    BatchEntry check{draft_tokens, 5, 3, tables[1], true};
    check.drafts = drafts;
    check.num_prompt = 4;
    BatchEntry preempted{recompute, 0, 9, tables[2], true};  // the whole sequence again
    preempted.num_prompt = 6;
    BatchEntry part{chunk, 2, 5, tables[3], false};  // a middle chunk of a long prompt
    part.num_prompt = 10;
    part.num_scored = 2;
    BatchEntry no_roles{untold, 0, 4, tables[4], true};  // num_prompt not set: all output
    entries = {decode, check, preempted, part, no_roles};
    auto b = builder.build(entries);
    EXPECT_TRUE(b.is_ok()) << b.status().to_string();
    return *b;
  }
  // Row r holds a prompt token when its position is below its entry's num_prompt.
  std::vector<uint8_t> expected_prompt_rows(const ForwardBatch& b) const {
    std::vector<uint8_t> out(static_cast<size_t>(b.num_tokens()), 0);
    const int32_t prompt_len[] = {5, 4, 6, 10, 0};
    const size_t order[] = {0, 1, 1, 1, 2, 3, 4};  // batch requests -> entries (check expands)
    for (int64_t q = 0; q < b.num_requests(); ++q) {
      for (int32_t r = b.query_start[q]; r < b.query_start[q + 1]; ++r) {
        out[r] = b.positions[r] < prompt_len[order[q]] ? 1 : 0;
      }
    }
    return out;
  }
};

struct PackedMatrix {
  std::vector<uint8_t> bytes;
  TensorView view;
};

PackedMatrix random_matrix(std::mt19937& rng, DType type) {
  PackedMatrix m;
  m.bytes = kernels::testing::random_weights(rng, type, kN, kK);
  m.view.name = "blk.0.ffn_up.weight";
  m.view.type = type;
  m.view.shape = {kN, kK};
  m.view.data = reinterpret_cast<const std::byte*>(m.bytes.data());
  m.view.nbytes = m.bytes.size();
  return m;
}

void set_up(CpuOps& ops) {
  KvCacheSpec kv;
  kv.num_layers = 1;
  kv.num_blocks = 8;
  kv.num_kv_heads = 1;
  kv.head_dim = 64;
  ASSERT_TRUE(ops.alloc_kv_cache(kv).is_ok());
}

class MatmulPrecisionRows : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulPrecisionRows, AutoRunsPromptRowsInQ8AndTheRestInQ8x2) {
  std::mt19937 rng(11);
  const PackedMatrix a = random_matrix(rng, GetParam()), b = random_matrix(rng, GetParam());
  StepFixture f;
  const ForwardBatch batch = f.batch();
  ASSERT_TRUE(batch.validate(100, 8, 16).is_ok());
  const int64_t T = batch.num_tokens();
  const std::vector<uint8_t> prompt = f.expected_prompt_rows(batch);
  ASSERT_EQ(std::count(prompt.begin(), prompt.end(), 1), 6 + 5);  // the recompute's and the chunk's
  const auto x = kernels::testing::random_floats(rng, static_cast<size_t>(T * kK));

  CpuOps ops(2, *parse_matmul_precision("auto"));
  set_up(ops);
  auto wa = ops.prepare_weight(a.view);
  auto wb = ops.prepare_weight(b.view);
  ASSERT_TRUE(wa.is_ok() && wb.is_ok());
  ASSERT_TRUE(ops.begin_step(batch).is_ok());

  std::vector<float> y(T * kN), ya(T * kN), yb(T * kN);
  ops.matmul(x.data(), T, *wa, nullptr, y.data());
  const Weight* ws[] = {&*wa, &*wb};
  float* ys[] = {ya.data(), yb.data()};
  ops.matmul_multi(x.data(), T, ws, {}, ys);

  // The oracle: each precision over the whole input (rows are independent of each other).
  kernels::ThreadPool pool(1);
  const auto pa = kernels::pack_weight(GetParam(), a.bytes.data(), kN, kK);
  const auto pb = kernels::pack_weight(GetParam(), b.bytes.data(), kN, kK);
  std::vector<float> a_q8(T * kN), a_x2(T * kN), b_q8(T * kN), b_x2(T * kN);
  kernels::matmul_packed(pool, x.data(), T, pa, a_q8.data(), ActPrecision::kQ8);
  kernels::matmul_packed(pool, x.data(), T, pa, a_x2.data(), ActPrecision::kQ8x2);
  kernels::matmul_packed(pool, x.data(), T, pb, b_q8.data(), ActPrecision::kQ8);
  kernels::matmul_packed(pool, x.data(), T, pb, b_x2.data(), ActPrecision::kQ8x2);

  for (int64_t r = 0; r < T; ++r) {
    const bool output = prompt[r] == 0;
    const size_t off = static_cast<size_t>(r * kN);
    const auto row = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + off, v.begin() + off + kN);
    };
    ASSERT_NE(row(a_q8), row(a_x2)) << "row " << r << ": the two precisions must differ here";
    EXPECT_EQ(row(y), row(output ? a_x2 : a_q8)) << "matmul, row " << r;
    EXPECT_EQ(row(ya), row(output ? a_x2 : a_q8)) << "matmul_multi[0], row " << r;
    EXPECT_EQ(row(yb), row(output ? b_x2 : b_q8)) << "matmul_multi[1], row " << r;
  }

  // The LM head over the gathered sampled rows: all q8x2, even when as many as the step's rows.
  std::vector<float> gathered(T * kK), head(T * kN);
  ops.gather_sample_rows(x.data(), kK, gathered.data());
  ops.matmul(x.data(), T, *wa, nullptr, head.data());
  EXPECT_EQ(head, a_x2);
}

TEST_P(MatmulPrecisionRows, UniformSettingsRunEveryRowAlike) {
  for (const char* name : {"q8x2", "q8"}) {
    std::mt19937 rng(5);
    const PackedMatrix a = random_matrix(rng, GetParam());
    StepFixture f;
    const ForwardBatch batch = f.batch();
    const int64_t T = batch.num_tokens();
    const auto x = kernels::testing::random_floats(rng, static_cast<size_t>(T * kK));
    const MatmulPrecision p = *parse_matmul_precision(name);
    CpuOps ops(2, p);
    set_up(ops);
    auto w = ops.prepare_weight(a.view);
    ASSERT_TRUE(w.is_ok());
    ASSERT_TRUE(ops.begin_step(batch).is_ok());
    std::vector<float> y(T * kN), want(T * kN);
    ops.matmul(x.data(), T, *w, nullptr, y.data());
    kernels::ThreadPool pool(1);
    const auto pw = kernels::pack_weight(GetParam(), a.bytes.data(), kN, kK);
    kernels::matmul_packed(pool, x.data(), T, pw, want.data(), p.output);
    EXPECT_EQ(y, want) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, MatmulPrecisionRows,
                         ::testing::Values(DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q6_K),
                         [](const auto& info) {
                           return std::string(kernels::dtype_name(info.param));
                         });

}  // namespace
}  // namespace llmserve
