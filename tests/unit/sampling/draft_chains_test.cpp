// Verification of draft chains: the kept tokens and the sample's state after a check equal
// those of sampling the same rows one at a time without speculation (the oracle), on the host
// (sample_chains) and for a sampler that draws every row at once (ParallelChains).
#include "engine/runner/draft_chains.h"

#include <gtest/gtest.h>

#include <random>

namespace llmserve {
namespace {

constexpr int32_t kDraftVocab = 300;

std::vector<float> row_logits(uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> v(kDraftVocab);
  for (float& x : v) x = dist(gen);
  return v;
}

SamplingParams params(float temperature, float frequency_penalty = 0.0f) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = 99;
  p.top_p = 0.9f;
  p.frequency_penalty = frequency_penalty;
  return p;
}

SamplingState fresh(const SamplingParams& p) {
  return SamplingState(p, std::vector<int32_t>{1, 2, 3}, SamplingState::resolve_seed(p, 0, 1, 0));
}

// Reference: sample rows one by one (each row's logits fixed), as decoding would.
std::vector<int32_t> decode_reference(const SamplingParams& p, const std::vector<float>& logits,
                                      size_t rows, SamplingState& st) {
  Sampler sampler(kDraftVocab, {});
  std::vector<int32_t> out;
  for (size_t r = 0; r < rows; ++r) {
    out.push_back(
        sampler.sample(std::span(logits).subspan(r * kDraftVocab, kDraftVocab), p, st).token_id);
  }
  return out;
}

// Rows for one chain whose drafts are the reference tokens, with the one at `wrong` replaced.
std::vector<SampleRow> chain(const SamplingParams& p, SamplingState& st,
                             const std::vector<int32_t>& ref, int32_t wrong) {
  std::vector<SampleRow> rows;
  for (size_t j = 0; j < ref.size(); ++j) {
    int32_t draft = -1;
    if (j + 1 < ref.size())
      draft = static_cast<int32_t>(j) == wrong ? (ref[j] + 1) % kDraftVocab : ref[j];
    rows.push_back({nullptr, &p, &st, draft});
  }
  return rows;
}

void expect_same_state(SamplingState& a, SamplingState& b) {
  EXPECT_EQ(a.num_generated(), b.num_generated());
  EXPECT_EQ(a.rng().counter(), b.rng().counter());
  EXPECT_EQ(a.output_counts(), b.output_counts());
}

// Samples rows all at once, in reverse order, each with only its own state.
std::vector<SampleResult> sample_in_parallel(std::span<const SampleRow> rows,
                                             const std::vector<float>& logits) {
  Sampler sampler(kDraftVocab, {});
  std::vector<SampleResult> out(rows.size());
  for (size_t s = rows.size(); s-- > 0;) {
    out[s] = sampler.sample(std::span(logits).subspan(s * kDraftVocab, kDraftVocab),
                            *rows[s].params, *rows[s].state);
  }
  return out;
}

class DraftChains : public ::testing::TestWithParam<std::tuple<float, float>> {};

TEST_P(DraftChains, KeptTokensAndStateEqualDecodingOneByOne) {
  const auto [temperature, penalty] = GetParam();
  const SamplingParams p = params(temperature, penalty);
  const size_t rows = 5;  // 4 drafts + 1
  std::vector<float> logits;
  for (size_t r = 0; r < rows; ++r) {
    const auto row = row_logits(r);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  for (int32_t wrong = -1; wrong < 4; ++wrong) {
    SamplingState ref_state = fresh(p);
    const std::vector<int32_t> ref = decode_reference(p, logits, rows, ref_state);
    const int32_t kept = wrong < 0 ? 5 : wrong + 1;  // up to and including the first mismatch
    SamplingState expect_state = fresh(p);
    decode_reference(p, logits, static_cast<size_t>(kept), expect_state);

    SamplingState host_state = fresh(p);
    const std::vector<SampleRow> host_rows = chain(p, host_state, ref, wrong);
    Sampler sampler(kDraftVocab, {});
    const auto host = sample_chains(sampler, logits, host_rows);

    SamplingState par_state = fresh(p);
    const std::vector<SampleRow> par_rows = chain(p, par_state, ref, wrong);
    ParallelChains chains;
    auto par = sample_in_parallel(chains.prepare(par_rows), logits);
    chains.finish(par);

    for (size_t j = 0; j < rows; ++j) {
      const int32_t want = static_cast<int32_t>(j) < kept ? ref[j] : -1;
      EXPECT_EQ(host[j].token_id, want) << "wrong " << wrong << " row " << j;
      EXPECT_EQ(par[j].token_id, want) << "wrong " << wrong << " row " << j;
    }
    expect_same_state(host_state, expect_state);
    expect_same_state(par_state, expect_state);
  }
}

INSTANTIATE_TEST_SUITE_P(Temperatures, DraftChains,
                         ::testing::Values(std::tuple{0.0f, 0.0f}, std::tuple{0.7f, 0.0f},
                                           std::tuple{1.3f, 0.0f}, std::tuple{0.7f, 0.8f}));

TEST(DraftChainsTest, ChainsOfDifferentSamplesAreIndependent) {
  const SamplingParams p = params(0.0f);
  std::vector<float> logits;
  for (size_t r = 0; r < 4; ++r) {
    const auto row = row_logits(10 + r);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  SamplingState a = fresh(p), b = fresh(p), c = fresh(p);
  // a: 2 rows with a wrong draft; b: one plain row; c: one plain row.
  const std::vector<SampleRow> rows = {{nullptr, &p, &a, kDraftVocab + 5},
                                       {nullptr, &p, &a, -1},
                                       {nullptr, &p, &b, -1},
                                       {nullptr, &p, &c, -1}};
  Sampler sampler(kDraftVocab, {});
  const auto out = sample_chains(sampler, logits, rows);
  EXPECT_GE(out[0].token_id, 0);
  EXPECT_EQ(out[1].token_id, -1);  // after the rejected draft (an id past the vocab)
  EXPECT_GE(out[2].token_id, 0);
  EXPECT_GE(out[3].token_id, 0);
  EXPECT_EQ(a.num_generated(), 1);
  EXPECT_EQ(b.num_generated(), 1);
}

}  // namespace
}  // namespace llmserve
