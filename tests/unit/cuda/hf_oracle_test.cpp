// llmserve against HF transformers on the GPU (hf_oracle.h): the random-weight models that
// tests/reference/gpu_oracle.py made in $LLMSERVE_GPU_ORACLE_DIR, loaded from their HF
// directories and run on CUDA (LLMSERVE_GPU_ORACLE_BACKEND=cpu runs them on the CPU backend, to
// check a reference made without a GPU). Those tests skip when the variable is unset, which
// scripts/gpu-check.sh counts as a failure. The HfOracleDriver tests check the driver itself on
// the CPU: its schedule, its row comparison, the file format, and a CPU-backend run against a
// reference made by running each prompt alone.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "tests/unit/cuda/cuda_test_util.h"
#include "tests/unit/cuda/hf_oracle.h"

namespace llmserve::oracle {
namespace {

namespace fs = std::filesystem;

OracleRef fake_ref(std::vector<int> lens, int n_new, int64_t vocab) {
  OracleRef r;
  r.vocab = vocab;
  r.n_new = n_new;
  int64_t row = 0;
  for (size_t p = 0; p < lens.size(); ++p) {
    PromptRef pr;
    for (int i = 0; i < lens[p]; ++i)
      pr.ids.push_back(static_cast<int32_t>((p * 31 + i * 7) % vocab));
    pr.greedy.assign(static_cast<size_t>(n_new), 1);
    pr.margins.assign(static_cast<size_t>(n_new), 1.0);
    pr.prefill_row = row;
    row += lens[p];
    r.prompts.push_back(pr);
  }
  return r;
}

TEST(HfOracleDriver, ScheduleGivesEveryPromptEachGreedyStepOnce) {
  const OracleRef ref = fake_ref({3, 16, 20, 40}, 5, 100);
  const auto steps = make_schedule(ref);
  ASSERT_EQ(steps.size(), 6u);
  std::vector<std::multiset<int>> ks(ref.prompts.size());
  std::vector<std::vector<std::pair<int64_t, int64_t>>> chunks(ref.prompts.size());
  for (const auto& step : steps) {
    bool seen_prefill = false;
    for (const Work& w : step) {
      if (w.k >= 0) ks[w.prompt].insert(w.k);
      if (w.begin < w.end) {
        chunks[w.prompt].push_back({w.begin, w.end});
        seen_prefill = true;
      } else {
        EXPECT_FALSE(seen_prefill) << "a decode after a prefill in one step";
        EXPECT_GE(w.k, 1);
      }
    }
  }
  for (size_t p = 0; p < ref.prompts.size(); ++p) {
    EXPECT_EQ(ks[p], (std::multiset<int>{0, 1, 2, 3, 4})) << "prompt " << p;
  }
  EXPECT_EQ(chunks[3], (std::vector<std::pair<int64_t, int64_t>>{{0, 20}, {20, 40}}));
  EXPECT_EQ(chunks[2], (std::vector<std::pair<int64_t, int64_t>>{{0, 20}}));
  // Step 1 mixes decodes of the first prompts with the two prefills.
  ASSERT_EQ(steps[1].size(), 4u);
  EXPECT_EQ(steps[1][0].k, 1);
  EXPECT_LT(steps[1][2].begin, steps[1][2].end);
  EXPECT_EQ(steps[1][3].begin, 20);
}

TEST(HfOracleDriver, StepBuilderMakesValidBatches) {
  StepBuilder sb{16, 4};
  const std::vector<int32_t> one = {7}, many = {1, 2, 3, 4, 5};
  sb.add(0, one, 20, false, 3);
  sb.add(2, many, 16, true, 0);
  const ForwardBatch b = sb.view();
  EXPECT_TRUE(b.validate(100, 12, 16).is_ok()) << b.validate(100, 12, 16).message();
  EXPECT_EQ(b.num_decodes, 1);
  EXPECT_EQ(sb.rows, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(sb.slots[0], 1 * 16 + 4);        // prompt 0, position 20: its block 1, offset 4
  EXPECT_EQ(sb.slots[1], (8 + 1) * 16 + 0);  // prompt 2 owns blocks 8..11; position 16
  EXPECT_EQ(sb.samples[0].k, 3);
  EXPECT_EQ(sb.samples[1].k, -1);
  EXPECT_EQ(sb.samples[5].k, 0);
  EXPECT_EQ(sb.samples[5].prefill_index, 20);
}

TEST(HfOracleDriver, CompareRowIgnoresAShiftAndMeasuresTheRest) {
  std::vector<float> want = cuda_test::random_floats(4096, 3, -4, 4), got = want;
  for (float& x : got) x += 2.5f;
  EXPECT_LT(compare_row(got, want).rel_l2, 1e-6);
  got = want;
  got[17] += 1.0f;
  const RowDiff d = compare_row(got, want);
  EXPECT_NEAR(d.err_rms, 1.0 / std::sqrt(4096.0), 1e-4);
  EXPECT_GT(d.max_abs_over_std, 0.4);  // std of U(-4, 4) is 2.31
  got[3] = NAN;
  EXPECT_FALSE(compare_row(got, want).rel_l2 <= kRelL2Tol);
}

void write_f32(const fs::path& p, const std::vector<float>& v) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
}

// Writes ref in gpu_oracle.py's format into dir (model files at model_dir).
void write_ref(const fs::path& dir, const OracleRef& ref, const std::string& model_dir) {
  nlohmann::json prompts = nlohmann::json::array();
  for (const PromptRef& p : ref.prompts) {
    prompts.push_back({{"ids", p.ids}, {"greedy", p.greedy}, {"margins", p.margins}});
  }
  const nlohmann::json j = {{"name", ref.name},
                            {"model_dir", model_dir},
                            {"vocab_size", ref.vocab},
                            {"n_new", ref.n_new},
                            {"prompts", prompts},
                            {"prefill_logits", ref.name + ".prefill.f32"},
                            {"decode_logits", ref.name + ".decode.f32"}};
  std::ofstream(dir / (ref.name + ".ref.json")) << j.dump();
  std::ofstream(dir / "manifest.json")
      << nlohmann::json{{"models", {{{"name", ref.name}, {"ref", ref.name + ".ref.json"}}}}}.dump();
  write_f32(dir / (ref.name + ".prefill.f32"), ref.prefill);
  write_f32(dir / (ref.name + ".decode.f32"), ref.decode);
}

TEST(HfOracleDriver, LoadReferenceChecksTheFiles) {
  const fs::path dir = fs::temp_directory_path() / "llmserve_oracle_format";
  fs::create_directories(dir);
  OracleRef ref = fake_ref({3, 4, 5}, 2, 10);
  ref.name = "m";
  ref.prefill.assign(12 * 10, 0.5f);
  ref.decode.assign(3 * 2 * 10, 0.25f);
  write_ref(dir, ref, "model");
  auto got = load_reference(dir.string(), "m");
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  EXPECT_EQ(got->prompts[2].prefill_row, 7);
  EXPECT_EQ(got->model_dir, (dir / "model").string());
  EXPECT_EQ(got->decode_row(2, 1).size(), 10u);
  EXPECT_EQ(load_reference(dir.string(), "other").status().code(), StatusCode::kNotFound);
  ref.decode.pop_back();
  write_ref(dir, ref, "model");
  EXPECT_EQ(load_reference(dir.string(), "m").status().code(), StatusCode::kDataLoss);
  fs::remove_all(dir);
}

ModelRunnerOptions runner_options(const std::string& model_dir, bool cuda, bool graphs) {
  ModelRunnerOptions o;
  o.model_path = model_dir;
  o.use_cuda = cuda;
  o.gpu_memory_utilization = 0.2;
  o.max_num_seqs = 8;
  o.max_model_len = 1024;
  o.max_tokens_per_step = 1024;
  o.max_samples_per_step = 1024;
  o.cuda_graphs = graphs;
  return o;
}

// The reference of `ref.prompts` made by running each prompt alone, greedy, on `runner`.
void fill_alone(ModelRunner& runner, OracleRef& ref) {
  const int bs = runner.block_size();
  const int64_t V = ref.vocab;
  for (size_t p = 0; p < ref.prompts.size(); ++p) {
    PromptRef& pr = ref.prompts[p];
    pr.greedy.clear();
    pr.margins.clear();
    StepBuilder sb{bs, 8};
    sb.add(0, pr.ids, 0, true, 0);
    auto l = runner.execute(sb.view());
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    ref.prefill.insert(ref.prefill.end(), l->begin(), l->end());
    std::vector<float> last(l->end() - V, l->end());
    for (int k = 0; k < ref.n_new; ++k) {
      ref.decode.insert(ref.decode.end(), last.begin(), last.end());
      std::vector<float> sorted = last;
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
      pr.greedy.push_back(argmax(last));
      pr.margins.push_back(sorted[0] - sorted[1]);
      if (k + 1 == ref.n_new) break;
      StepBuilder d{bs, 8};
      d.add(0, std::span(&pr.greedy.back(), 1), static_cast<int64_t>(pr.ids.size()) + k, false,
            k + 1);
      auto ld = runner.execute(d.view());
      ASSERT_TRUE(ld.is_ok()) << ld.status().message();
      last.assign(ld->begin(), ld->end());
    }
  }
}

TEST(HfOracleDriver, CpuBackendBatchedMatchesEachPromptAlone) {
  const std::string model = std::string(LLMSERVE_FIXTURES_DIR) + "/tiny_llama";
  auto alone = ModelRunner::create(runner_options(model, false, false));
  ASSERT_TRUE(alone.is_ok()) << alone.status().message();
  OracleRef ref = fake_ref({4, 16, 19, 45}, 6, (*alone)->config().vocab_size);
  ref.name = "tiny";
  fill_alone(**alone, ref);
  ASSERT_FALSE(HasFatalFailure());
  const fs::path dir = fs::temp_directory_path() / "llmserve_oracle_cpu";
  fs::create_directories(dir);
  write_ref(dir, ref, fs::relative(model, dir).string());
  auto loaded = load_reference(dir.string(), "tiny");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  auto batched = ModelRunner::create(runner_options(loaded->model_dir, false, false));
  ASSERT_TRUE(batched.is_ok()) << batched.status().message();
  auto res = run_oracle(*loaded, **batched);
  fs::remove_all(dir);
  ASSERT_TRUE(res.is_ok()) << res.status().message();
  EXPECT_EQ(res->rows, 84 + 4 * 5);  // every prefill row, then 5 decodes of each prompt
  EXPECT_EQ(res->bad_rows, 0);
  EXPECT_LT(res->worst_rel_l2, 1e-4) << res->worst_where;
  EXPECT_EQ(res->greedy_equal, 4 * 6);
  EXPECT_EQ(res->free_run, (std::vector<int>{6, 6, 6, 6}));
  for (const auto& f : res->failures) ADD_FAILURE() << f;
}

// The oracle test proper: model `name` of $LLMSERVE_GPU_ORACLE_DIR.
void check_model(const std::string& name, bool graphs) {
  const char* cpu_env = std::getenv("LLMSERVE_GPU_ORACLE_BACKEND");
  const bool cpu = cpu_env != nullptr && std::string(cpu_env) == "cpu";
  if (!cpu) LLMSERVE_REQUIRE_CUDA();
  const char* dir = std::getenv("LLMSERVE_GPU_ORACLE_DIR");
  if (dir == nullptr || *dir == '\0') {
    GTEST_SKIP() << "LLMSERVE_GPU_ORACLE_DIR is not set (scripts/gpu-check.sh sets it)";
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto ref = load_reference(dir, name);
  ASSERT_TRUE(ref.is_ok()) << ref.status().message();
  auto runner = ModelRunner::create(runner_options(ref->model_dir, !cpu, graphs));
  ASSERT_TRUE(runner.is_ok()) << runner.status().message();
  auto res = run_oracle(*ref, **runner);
  ASSERT_TRUE(res.is_ok()) << name << ": " << res.status().message();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const nlohmann::json line = {{"model", name},
                               {"backend", cpu ? "cpu" : "cuda"},
                               {"graphs", graphs},
                               {"rows", res->rows},
                               {"bad_rows", res->bad_rows},
                               {"median_rel_l2", res->median_rel_l2},
                               {"worst_rel_l2", res->worst_rel_l2},
                               {"worst_where", res->worst_where},
                               {"worst_max_abs_over_std", res->worst_max_abs},
                               {"greedy_equal", res->greedy_equal},
                               {"near_ties", res->near_ties},
                               {"mismatches", res->mismatches},
                               {"free_run", res->free_run},
                               {"prompt_median_rel_l2", res->prompt_median},
                               {"prompt_max_rel_l2", res->prompt_max},
                               {"long_prompt_median_per_64", res->long_prefill_profile},
                               {"tolerance_rel_l2", kRelL2Tol},
                               {"seconds", seconds}};
  std::printf("ORACLE %s\n", line.dump().c_str());
  EXPECT_EQ(res->bad_rows, 0) << name << ": logit rows out of tolerance";
  EXPECT_EQ(res->mismatches, 0) << name << ": greedy tokens differ away from near-ties";
  for (const auto& f : res->failures) ADD_FAILURE() << name << ": " << f;
}

TEST(HfOracle, Smollm2ShapeCudaGraphs) {
  check_model("smollm2-135m-shape", true);
}
TEST(HfOracle, HeadDim128Gqa4CudaGraphs) {
  check_model("hd128-gqa4", true);
}
TEST(HfOracle, HeadDim128Gqa4Eager) {
  check_model("hd128-gqa4", false);
}

}  // namespace
}  // namespace llmserve::oracle
