// DeviceSampler against the CPU Sampler (its oracle) on the same logits and states: greedy
// exactly equal; seeded draws equal except where the CPU's decision sits within kEps of a
// boundary (the draw target, the min_p threshold, the top_p limit: f32 exp differs by an ulp
// between CUDA and glibc), counted and reported; processed logits bit for bit; logprobs within
// 1e-4 and the top-N ids equal (up to ties).
#include "engine/runner/cuda/device_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "engine/grammar/grammar_compiler.h"
#include "engine/grammar/token_bitmask.h"
#include "engine/runner/logits_processor.h"
#include "llmserve/kernels/cuda/sampling.h"
#include "tests/unit/cuda/cuda_test_util.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve {
namespace {

using cuda_test::DeviceBuffer;

constexpr double kEps = 1e-5;  // relative margin under which a decision may differ
const std::vector<int32_t> kEos = {0, 2};

class Stream {
 public:
  Stream() { EXPECT_EQ(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), cudaSuccess); }
  ~Stream() { cudaStreamDestroy(s_); }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// Whether the CPU's choice on these processed logits is within kEps of a decision boundary
// (Sampler::draw written out in double, the documented order).
bool fragile(const std::vector<float>& x, const SamplingParams& p, double u) {
  std::vector<int32_t> ranked;
  for (int32_t i = 0; i < static_cast<int32_t>(x.size()); ++i)
    if (x[i] > -std::numeric_limits<float>::infinity()) ranked.push_back(i);
  if (ranked.empty()) return false;
  std::sort(ranked.begin(), ranked.end(),
            [&](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
  if (std::isinf(x[ranked[0]])) return false;
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < ranked.size()) ranked.resize(p.top_k);
  const float inv_t = 1.0f / p.temperature;
  std::vector<double> w(ranked.size());
  double z = 0;
  for (size_t j = 0; j < ranked.size(); ++j)
    z += w[j] = std::exp((x[ranked[j]] - x[ranked[0]]) * inv_t);
  size_t keep = ranked.size();
  if (p.top_p < 1.0f) {
    const double limit = static_cast<double>(p.top_p) * z;
    double before = 0;
    for (keep = 0; keep < ranked.size() && before < limit; ++keep) {
      if (std::fabs(before - limit) <= kEps * z || std::fabs(before + w[keep] - limit) <= kEps * z)
        return true;
      before += w[keep];
    }
  }
  std::vector<std::pair<int32_t, double>> kept;
  for (size_t j = 0; j < keep; ++j) {
    if (p.min_p > 0 && std::fabs(w[j] - p.min_p) <= kEps * p.min_p) return true;
    if (w[j] >= p.min_p) kept.emplace_back(ranked[j], w[j]);
  }
  std::sort(kept.begin(), kept.end());
  double total = 0, cum = 0;
  for (const auto& k : kept) total += k.second;
  const double target = u * total;
  for (const auto& k : kept) {
    if (std::fabs(cum - target) <= kEps * total) return true;
    cum += k.second;
  }
  return std::fabs(cum - target) <= kEps * total;
}

enum class LogitShape { kPeaked, kFlat, kTies, kDominant };

std::vector<float> make_row(int32_t vocab, LogitShape shape, std::mt19937_64& g) {
  std::normal_distribution<float> d(0.0f, shape == LogitShape::kFlat ? 0.3f : 3.0f);
  std::vector<float> x(vocab);
  for (float& v : x) v = d(g);
  if (shape == LogitShape::kTies) {
    for (float& v : x) v = std::round(v * 2.0f) / 2.0f;
    x[g() % vocab] = x[g() % vocab] = 30.0f;  // ties at the top, away from id 0
  }
  if (shape == LogitShape::kDominant) x[g() % vocab] = 25.0f;
  return x;
}

struct SamplerBatch {
  int32_t vocab = 0;
  std::vector<float> logits;  // [rows, vocab]
  std::vector<SamplingParams> params;
  std::vector<SamplingState> states;
};

// Random requests; greedy when temperature == 0. Penalties, bias and min_tokens on some rows.
SamplerBatch make_batch(int32_t vocab, int rows, float temperature, uint64_t seed) {
  std::mt19937_64 g(seed);
  SamplerBatch b;
  b.vocab = vocab;
  for (int r = 0; r < rows; ++r) {
    SamplingParams p;
    p.temperature = temperature;
    p.seed = g();
    const int k = static_cast<int>(g() % 6);
    if (k == 1) p.top_k = 1 + static_cast<int32_t>(g() % 50);
    if (k == 2) p.top_k = 1000 + static_cast<int32_t>(g() % 2000);
    if (g() % 3 == 0) p.top_p = 0.5f + 0.49f * static_cast<float>(g() % 100) / 100.0f;
    if (g() % 4 == 0) p.min_p = 0.02f * static_cast<float>(1 + g() % 10);
    if (g() % 4 == 0) p.repetition_penalty = 1.2f;
    if (g() % 4 == 0) p.presence_penalty = 0.4f, p.frequency_penalty = 0.3f;
    if (g() % 5 == 0) p.logit_bias = {{static_cast<int32_t>(g() % vocab), 4.0f}, {5, -100.0f}};
    if (g() % 5 == 0) p.min_tokens = 4, p.stop_token_ids = {7};
    if (g() % 7 == 0) p.ignore_eos = true;
    const int lp = static_cast<int>(g() % 5);
    p.logprobs = lp == 0 ? -1 : lp == 1 ? 0 : lp == 2 ? 1 : lp == 3 ? 5 : 20;
    std::vector<int32_t> prompt;
    for (int j = 0; j < 64; ++j) prompt.push_back(static_cast<int32_t>(g() % vocab));
    SamplingState st(p, prompt, SamplingState::resolve_seed(p, 0, r, 0));
    for (int j = static_cast<int>(g() % 8); j > 0; --j)
      st.append(static_cast<int32_t>(g() % vocab));
    const auto row = make_row(vocab, static_cast<LogitShape>(g() % 4), g);
    b.logits.insert(b.logits.end(), row.begin(), row.end());
    b.params.push_back(p);
    b.states.push_back(std::move(st));
  }
  return b;
}

struct Tally {
  int rows = 0, mismatched = 0, explained = 0;
};

// Samples `b` on the device and on the CPU (on copies of the states) for `steps` steps, the
// logits of later steps shifted by a per-step offset so that penalties and counters move.
Tally compare(SamplerBatch& b, int steps, const char* what) {
  Tally t;
  Stream stream;
  const int rows = static_cast<int>(b.params.size());
  auto made = DeviceSampler::create(b.vocab, rows, kEos, stream.get(), 1 << 16, 20);
  EXPECT_TRUE(made.is_ok()) << made.status().message();
  if (!made.is_ok()) return t;
  DeviceSampler& dev = **made;
  Sampler cpu(b.vocab, kEos);
  for (int step = 0; step < steps; ++step) {
    std::vector<float> logits = b.logits;
    for (size_t i = 0; i < logits.size(); ++i) logits[i] += 0.01f * static_cast<float>(step);
    DeviceBuffer<float> d_logits(logits);
    std::vector<SamplingState> cpu_states = b.states;
    std::vector<SampleRow> dev_rows;
    for (int r = 0; r < rows; ++r) dev_rows.push_back({nullptr, &b.params[r], &b.states[r]});
    std::vector<std::vector<float>> processed(rows);
    std::vector<double> u(rows);
    for (int r = 0; r < rows; ++r) {
      const float* row = logits.data() + static_cast<size_t>(r) * b.vocab;
      processed[r].assign(row, row + b.vocab);
      apply_logits_processors(processed[r], b.params[r], cpu_states[r], kEos);
      RequestRng rng = cpu_states[r].rng();
      rng.set_counter(static_cast<uint64_t>(cpu_states[r].num_generated()));
      u[r] = rng.next_uniform();
    }
    auto got = dev.sample(d_logits.get(), dev_rows);
    EXPECT_TRUE(got.is_ok()) << got.status().message();
    if (!got.is_ok()) return t;
    std::vector<float> dev_processed(static_cast<size_t>(rows) * b.vocab);
    EXPECT_EQ(cudaMemcpy(dev_processed.data(), dev.device_processed_logits(),
                         dev_processed.size() * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (int r = 0; r < rows; ++r) {
      const float* row = logits.data() + static_cast<size_t>(r) * b.vocab;
      const SampleResult want =
          cpu.sample({row, static_cast<size_t>(b.vocab)}, b.params[r], cpu_states[r]);
      const SampleResult& have = (*got)[r];
      EXPECT_EQ(
          std::memcmp(processed[r].data(), dev_processed.data() + static_cast<size_t>(r) * b.vocab,
                      b.vocab * sizeof(float)),
          0)
          << what << " step " << step << " row " << r << ": processed logits differ";
      ++t.rows;
      if (want.token_id != have.token_id) {
        ++t.mismatched;
        const bool ok = b.params[r].temperature >= Sampler::kGreedyTemperature &&
                        fragile(processed[r], b.params[r], u[r]);
        t.explained += ok ? 1 : 0;
        EXPECT_TRUE(ok) << what << " step " << step << " row " << r << ": cpu " << want.token_id
                        << " device " << have.token_id << " (not near a boundary)";
      }
      EXPECT_EQ(b.states[r].num_generated(), cpu_states[r].num_generated());
      EXPECT_EQ(b.states[r].rng().counter(), cpu_states[r].rng().counter());
      EXPECT_EQ(want.logprob.has_value(), have.logprob.has_value()) << what << " row " << r;
      if (!want.logprob || !have.logprob) continue;
      if (want.token_id == have.token_id) {
        EXPECT_NEAR(want.logprob->logprob, have.logprob->logprob, 1e-4) << what << " row " << r;
      }
      EXPECT_EQ(want.logprob->top.size(), have.logprob->top.size()) << what << " row " << r;
      const size_t common = std::min(want.logprob->top.size(), have.logprob->top.size());
      for (size_t j = 0; j < common; ++j) {
        const auto& a = want.logprob->top[j];
        const auto& c = have.logprob->top[j];
        EXPECT_TRUE(a.token_id == c.token_id || row[a.token_id] == row[c.token_id])
            << what << " row " << r << " top[" << j << "]: cpu " << a.token_id << " device "
            << c.token_id;
        EXPECT_NEAR(a.logprob, c.logprob, 1e-4) << what << " row " << r << " top[" << j << "]";
      }
    }
    // The device appended the same tokens as the CPU where they agreed; keep the CPU's so
    // both sides see one history on the next step.
    b.states = cpu_states;
  }
  return t;
}

void report(const char* what, const Tally& t) {
  std::printf("[device sampler] %s: %d rows, %d mismatched, %d within %.0e of a boundary\n", what,
              t.rows, t.mismatched, t.explained, kEps);
  ::testing::Test::RecordProperty(std::string(what) + "_mismatched", t.mismatched);
  EXPECT_LE(t.explained * 100, t.rows) << what << ": more than 1% boundary cases";
}

TEST(DeviceSampler, GreedyEqualsCpuExactly) {
  LLMSERVE_REQUIRE_CUDA();
  for (int32_t vocab : {49152, 128256}) {
    SamplerBatch b = make_batch(vocab, 48, 0.0f, 11 + vocab);
    const Tally t = compare(b, 3, vocab == 49152 ? "greedy49152" : "greedy128256");
    EXPECT_EQ(t.mismatched, 0);
  }
}

TEST(DeviceSampler, SeededMatchesCpuUpToBoundaries) {
  LLMSERVE_REQUIRE_CUDA();
  for (int32_t vocab : {49152, 128256}) {
    for (float temperature : {0.5f, 1.0f, 1.5f}) {
      SamplerBatch b = make_batch(vocab, vocab == 49152 ? 96 : 48, temperature,
                                  static_cast<uint64_t>(vocab + 1000 * temperature));
      char what[64];
      std::snprintf(what, sizeof what, "seeded_v%d_t%.1f", vocab, temperature);
      report(what, compare(b, 3, what));
    }
  }
}

TEST(DeviceSampler, FlatRowsAndFullMasking) {
  LLMSERVE_REQUIRE_CUDA();
  // Every logit equal: top_k / top_p cut inside one tie group (lowest ids first).
  SamplerBatch b = make_batch(49152, 16, 1.0f, 5);
  std::fill(b.logits.begin(), b.logits.end(), 0.5f);
  for (int r = 0; r < 16; ++r) {
    b.params[r].top_k = r % 2 ? 1 + 997 * r : 0;
    b.params[r].top_p = r % 3 ? 0.25f + 0.05f * static_cast<float>(r) : 1.0f;
    b.params[r].logprobs = 20;
  }
  report("flat", compare(b, 2, "flat"));
  // A tiny vocab where min_tokens masks every id: the raw argmax, as the CPU.
  SamplerBatch m = make_batch(3, 8, 1.0f, 6);
  for (auto& p : m.params) p.min_tokens = 100, p.stop_token_ids = {1}, p.ignore_eos = false;
  for (size_t r = 0; r < m.states.size(); ++r) m.states[r] = SamplingState(m.params[r], {}, r);
  const Tally t = compare(m, 2, "masked");
  EXPECT_EQ(t.mismatched, 0);
}

// Structured outputs on the device: each row's grammar bitmask, uploaded with the pack, masks
// its logits as the CPU's does. Greedy rows give the CPU's tokens step by step; seeded rows
// only ever take tokens their grammar allows (every one is accepted by the matcher).
TEST(DeviceSampler, GrammarMasksApplyOnTheDeviceAsOnTheCpu) {
  LLMSERVE_REQUIRE_CUDA();
  testing::FakeTokenizer tok;
  constexpr int32_t kVocab = 300;
  GrammarCompiler compiler(tok, kVocab, {});
  GrammarSpec spec;
  spec.kind = GrammarKind::kRegex;
  spec.text = "[a-c]{3,6}-[0-9]{2}";
  auto g =
      compiler.compile_and_wait(spec, std::chrono::steady_clock::now() + std::chrono::seconds(60));
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const std::vector<int32_t> eos = {testing::FakeTokenizer::kEos, testing::FakeTokenizer::kImEnd};
  Stream stream;
  constexpr int kRows = 8;
  auto made = DeviceSampler::create(kVocab, kRows, eos, stream.get(), 1 << 12, 20);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  Sampler cpu(kVocab, eos);
  std::vector<SamplingParams> params(kRows);
  std::vector<SamplingState> dev_states, cpu_states;
  for (int r = 0; r < kRows; ++r) {
    params[r].temperature = r < 4 ? 0.0f : 1.0f;
    params[r].seed = 40 + r;
    dev_states.emplace_back(params[r], std::span<const int32_t>(), 40 + r);
    dev_states.back().set_matcher((*g)->make_matcher());
  }
  cpu_states = dev_states;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (int step = 0; step < 12; ++step) {
    std::vector<int> live;  // rows whose grammar has not ended
    for (int r = 0; r < kRows; ++r) {
      if (!dev_states[r].grammar_ended()) live.push_back(r);
    }
    if (live.empty()) break;
    std::vector<float> logits(live.size() * kVocab);
    for (float& x : logits) x = dist(rng);
    DeviceBuffer<float> d_logits(logits);
    std::vector<SampleRow> rows;
    for (int r : live) rows.push_back({nullptr, &params[r], &dev_states[r]});
    auto got = (*made)->sample(d_logits.get(), rows);
    ASSERT_TRUE(got.is_ok()) << got.status().message();
    for (size_t i = 0; i < live.size(); ++i) {
      const int r = live[i];
      EXPECT_EQ(dev_states[r].matcher()->num_accepted(), dev_states[r].num_generated())
          << "row " << r << " step " << step << ": the device took a token the grammar refuses";
      if (r >= 4) continue;
      const SampleResult want = cpu.sample(
          {logits.data() + i * kVocab, static_cast<size_t>(kVocab)}, params[r], cpu_states[r]);
      EXPECT_EQ((*got)[i].token_id, want.token_id) << "row " << r << " step " << step;
    }
  }
  for (int r = 0; r < kRows; ++r) EXPECT_TRUE(dev_states[r].grammar_ended()) << "row " << r;
}

TEST(DeviceSampler, UniformsMatchRequestRng) {
  LLMSERVE_REQUIRE_CUDA();
  const int n = 4096;
  std::vector<uint64_t> keys(n), counters(n);
  for (int i = 0; i < n; ++i) {
    keys[i] = RequestRng(static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull).key();
    counters[i] = static_cast<uint64_t>(i % 97) * 1000003u;
  }
  DeviceBuffer<uint64_t> dk(keys), dc(counters);
  DeviceBuffer<double> out(n);
  ASSERT_EQ(kernels::cuda::sampling_uniforms(dk.get(), dc.get(), n, out.get(), nullptr),
            cudaSuccess);
  const std::vector<double> got = out.download();
  for (int i = 0; i < n; ++i) {
    RequestRng r(static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);
    r.set_counter(counters[i]);
    ASSERT_EQ(got[i], r.next_uniform()) << i;
  }
}

TEST(DeviceSampler, BoundsAndEmptyCalls) {
  LLMSERVE_REQUIRE_CUDA();
  Stream stream;
  EXPECT_FALSE(DeviceSampler::create(0, 4, kEos, stream.get(), 16).is_ok());
  EXPECT_FALSE(DeviceSampler::create(100, 0, kEos, stream.get(), 16).is_ok());
  EXPECT_FALSE(DeviceSampler::create(100, 4, kEos, stream.get(), 16, 2000).is_ok());
  auto made = DeviceSampler::create(100, 2, kEos, stream.get(), 4, 5);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  DeviceSampler& dev = **made;
  DeviceBuffer<float> logits(std::vector<float>(300, 0.0f));
  auto empty = dev.sample(logits.get(), {});
  ASSERT_TRUE(empty.is_ok());
  EXPECT_TRUE(empty->empty());
  SamplingParams p;
  SamplingState st(p, {}, 1);
  std::vector<SampleRow> three(3, SampleRow{nullptr, &p, &st});
  EXPECT_FALSE(dev.sample(logits.get(), three).is_ok());
  SamplingParams lp;
  lp.logprobs = 6;
  SampleRow lp_row{nullptr, &lp, &st};
  EXPECT_FALSE(dev.sample(logits.get(), {&lp_row, 1}).is_ok());
  EXPECT_FALSE(dev.sample(nullptr, {&lp_row, 1}).is_ok());
  EXPECT_EQ(st.num_generated(), 0);
  auto one = dev.sample(logits.get(), {three.data(), 1});
  ASSERT_TRUE(one.is_ok()) << one.status().message();
  EXPECT_EQ(st.num_generated(), 1);
  EXPECT_EQ(st.rng().counter(), 1u);
}

}  // namespace
}  // namespace llmserve
