#include "engine/runner/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace llmserve {
namespace {

std::vector<float> random_logits(int32_t vocab, uint64_t seed, float scale = 3.0f) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(vocab);
  for (float& x : v) x = dist(gen);
  return v;
}

SamplingParams seeded(uint64_t seed, float temperature = 1.0f) {
  SamplingParams p;
  p.seed = seed;
  p.temperature = temperature;
  return p;
}

SamplingState state_for(const SamplingParams& p, std::vector<int32_t> prompt = {1, 2, 3}) {
  return SamplingState(p, prompt, SamplingState::resolve_seed(p, 0, 7, 0));
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  Sampler sampler(6, {});
  SamplingParams p;
  p.temperature = 0.0f;
  SamplingState st = state_for(p);
  std::vector<float> logits = {0.1f, 2.5f, -1.0f, 2.5f, 0.0f, 1.0f};
  EXPECT_EQ(sampler.sample(logits, p, st).token_id, 1);
  logits[4] = 9.0f;
  EXPECT_EQ(sampler.sample(logits, p, st).token_id, 4);
  EXPECT_EQ(st.num_generated(), 2);
}

TEST(Sampler, GreedyMatchesArgmaxOnLargeVocab) {
  Sampler sampler(49152, {});
  SamplingParams p;
  p.temperature = 0.0f;
  SamplingState st = state_for(p);
  for (uint64_t s = 0; s < 5; ++s) {
    auto logits = random_logits(49152, s);
    auto expect = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(sampler.sample(logits, p, st).token_id, expect);
  }
}

// Logits for request r at step t, a fixed function so every run sees the same rows.
std::vector<float> step_logits(int r, int t) {
  return random_logits(1000, r * 1000 + t, 2.0f);
}

TEST(Sampler, SeededDrawsIndependentOfBatchCompositionAndOrder) {
  const int kRequests = 5, kSteps = 30;
  std::vector<SamplingParams> params;
  for (int r = 0; r < kRequests; ++r) {
    SamplingParams p = seeded(100 + r, 0.8f);
    if (r == 1) p.top_k = 20;
    if (r == 2) p.top_p = 0.9f;
    if (r == 3) p.min_p = 0.05f;
    if (r == 4) p.repetition_penalty = 1.3f, p.frequency_penalty = 0.5f;
    params.push_back(p);
  }
  // Alone.
  std::vector<std::vector<int32_t>> alone(kRequests);
  for (int r = 0; r < kRequests; ++r) {
    Sampler sampler(1000, {});
    SamplingState st = state_for(params[r]);
    for (int t = 0; t < kSteps; ++t)
      alone[r].push_back(sampler.sample(step_logits(r, t), params[r], st).token_id);
  }
  // Batched, shuffled every step, one shared sampler, requests joining at different steps.
  std::mt19937 shuffle_gen(42);
  Sampler sampler(1000, {});
  std::vector<SamplingState> states;
  for (int r = 0; r < kRequests; ++r)
    states.push_back(SamplingState(params[r], std::vector<int32_t>{1, 2, 3},
                                   SamplingState::resolve_seed(params[r], 999, r, 0)));
  std::vector<std::vector<int32_t>> batched(kRequests);
  for (int t = 0; t < kSteps + kRequests; ++t) {
    std::vector<int> order;
    for (int r = 0; r < kRequests; ++r) {
      const int step = t - r;  // request r joins at step r
      if (step >= 0 && step < kSteps) order.push_back(r);
    }
    std::shuffle(order.begin(), order.end(), shuffle_gen);
    std::vector<std::vector<float>> rows;
    std::vector<SampleRow> batch;
    for (int r : order) rows.push_back(step_logits(r, t - r));
    for (size_t i = 0; i < order.size(); ++i)
      batch.push_back({rows[i].data(), &params[order[i]], &states[order[i]]});
    auto results = sampler.sample_batch(batch);
    for (size_t i = 0; i < order.size(); ++i) batched[order[i]].push_back(results[i].token_id);
  }
  for (int r = 0; r < kRequests; ++r) EXPECT_EQ(alone[r], batched[r]) << "request " << r;
  // Different seeds give different sequences.
  EXPECT_NE(alone[0], alone[3]);
}

TEST(Sampler, UnseededRequestsDifferByRequestId) {
  SamplingParams p;
  EXPECT_NE(SamplingState::resolve_seed(p, 0, 1, 0), SamplingState::resolve_seed(p, 0, 2, 0));
  EXPECT_NE(SamplingState::resolve_seed(p, 0, 1, 0), SamplingState::resolve_seed(p, 0, 1, 1));
  EXPECT_EQ(SamplingState::resolve_seed(seeded(5), 0, 1, 0),
            SamplingState::resolve_seed(seeded(5), 3, 9, 0));
}

TEST(Sampler, TopKOneAndTinyTopPEqualGreedy) {
  Sampler sampler(5000, {});
  for (uint64_t s = 0; s < 20; ++s) {
    auto logits = random_logits(5000, s);
    logits[static_cast<size_t>(s * 37 % 5000)] = logits[static_cast<size_t>(s * 53 % 5000)] =
        20.0f;  // a tie
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    SamplingState g = state_for(greedy);
    const int32_t expect = sampler.sample(logits, greedy, g).token_id;
    SamplingParams k1 = seeded(s, 1.5f);
    k1.top_k = 1;
    SamplingState sk = state_for(k1);
    EXPECT_EQ(sampler.sample(logits, k1, sk).token_id, expect);
    SamplingParams p0 = seeded(s, 1.5f);
    p0.top_p = 1e-6f;
    SamplingState sp = state_for(p0);
    EXPECT_EQ(sampler.sample(logits, p0, sp).token_id, expect);
  }
}

// probs {0.5, 0.3, 0.15, 0.05} at T = 1.
std::vector<float> four_way() {
  return {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
}

std::vector<int> histogram(Sampler& sampler, const std::vector<float>& logits,
                           const SamplingParams& p, int draws) {
  SamplingState st = state_for(p);
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < draws; ++i) ++counts[sampler.sample(logits, p, st).token_id];
  return counts;
}

TEST(Sampler, MinPDropsTokensBelowFractionOfTop) {
  Sampler sampler(4, {});
  SamplingParams p = seeded(1);
  p.min_p = 0.2f;  // keeps p >= 0.1
  auto c = histogram(sampler, four_way(), p, 4000);
  EXPECT_EQ(c[3], 0);
  EXPECT_GT(c[2], 0);
  p.min_p = 0.7f;  // keeps p >= 0.35
  c = histogram(sampler, four_way(), p, 1000);
  EXPECT_EQ(c[0], 1000);
}

TEST(Sampler, TopKAndTopPKeepExpectedSets) {
  Sampler sampler(4, {});
  SamplingParams p = seeded(2);
  p.top_k = 2;
  auto c = histogram(sampler, four_way(), p, 8000);
  EXPECT_EQ(c[2] + c[3], 0);
  EXPECT_NEAR(c[0] / 8000.0, 0.625, 0.02);
  p.top_k = 0;
  p.top_p = 0.7f;  // 0.5 < 0.7 keeps token 1; 0.8 >= 0.7 stops
  c = histogram(sampler, four_way(), p, 8000);
  EXPECT_EQ(c[2] + c[3], 0);
  EXPECT_NEAR(c[0] / 8000.0, 0.625, 0.02);
  p.top_p = 0.85f;
  c = histogram(sampler, four_way(), p, 8000);
  EXPECT_EQ(c[3], 0);
  EXPECT_GT(c[2], 0);
}

TEST(Sampler, TopPBeyondFirstSortedChunk) {
  // 300 tokens at logit 0, 700 at -2: top_p 0.5 keeps the 198 lowest ids of the top group.
  std::vector<float> logits(1000, -2.0f);
  std::fill(logits.begin(), logits.begin() + 300, 0.0f);
  std::mt19937 g(3);
  std::shuffle(logits.begin(), logits.end(), g);
  std::vector<int32_t> top_ids;
  for (int32_t i = 0; i < 1000; ++i)
    if (logits[i] == 0.0f) top_ids.push_back(i);
  Sampler sampler(1000, {});
  SamplingParams p = seeded(4);
  p.top_p = 0.5f;
  auto c = histogram(sampler, logits, p, 6000);
  std::vector<bool> allowed(1000, false);
  for (int j = 0; j < 198; ++j) allowed[top_ids[j]] = true;
  int seen_allowed = 0;
  for (int i = 0; i < 1000; ++i) {
    if (allowed[i]) {
      seen_allowed += c[i] > 0;
    } else {
      EXPECT_EQ(c[i], 0) << i;
    }
  }
  EXPECT_GT(seen_allowed, 190);
}

TEST(Sampler, EmpiricalDistributionMatchesSoftmaxChiSquare) {
  const std::vector<float> logits = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, -1.5f, 1.2f, 0.7f};
  for (float temperature : {1.0f, 0.7f, 1.8f}) {
    Sampler sampler(8, {});
    const int kDraws = 20000;
    auto c = histogram(sampler, logits, seeded(11, temperature), kDraws);
    double z = 0;
    for (float l : logits) z += std::exp(l / temperature);
    double chi2 = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      const double expected = kDraws * std::exp(logits[i] / temperature) / z;
      chi2 += (c[i] - expected) * (c[i] - expected) / expected;
    }
    EXPECT_LT(chi2, 24.32) << "T=" << temperature;  // chi-square, 7 dof, p = 0.001
  }
}

TEST(Sampler, TopKDistributionIsRenormalised) {
  const std::vector<float> logits = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, -1.5f, 1.2f, 0.7f};
  Sampler sampler(8, {});
  SamplingParams p = seeded(12);
  p.top_k = 3;  // tokens 3, 6, 0
  const int kDraws = 20000;
  auto c = histogram(sampler, logits, p, kDraws);
  const double z = std::exp(2.0) + std::exp(1.2) + std::exp(1.0);
  double chi2 = 0;
  for (int i : {3, 6, 0}) {
    const double expected = kDraws * std::exp(logits[i]) / z;
    chi2 += (c[i] - expected) * (c[i] - expected) / expected;
  }
  EXPECT_EQ(c[3] + c[6] + c[0], kDraws);
  EXPECT_LT(chi2, 13.82);  // 2 dof, p = 0.001
}

TEST(Sampler, LogitBiasForcesAndBansTokens) {
  Sampler sampler(500, {});
  SamplingParams p = seeded(5);
  p.logit_bias = {{123, 100.0f}};
  SamplingState st = state_for(p);
  for (int t = 0; t < 50; ++t)
    EXPECT_EQ(sampler.sample(random_logits(500, t, 2.0f), p, st).token_id, 123);
  SamplingParams g;
  g.temperature = 0.0f;
  auto logits = random_logits(500, 9);
  const int32_t top = std::max_element(logits.begin(), logits.end()) - logits.begin();
  g.logit_bias = {{top, -100.0f}};
  SamplingState gs = state_for(g);
  EXPECT_NE(sampler.sample(logits, g, gs).token_id, top);
}

TEST(Sampler, MinTokensMasksEosAndStopTokens) {
  Sampler sampler(6, {0, 1});
  std::vector<float> logits = {5.0f, 4.0f, 3.0f, 2.0f, 0.0f, 0.0f};
  SamplingParams p;
  p.temperature = 0.0f;
  p.min_tokens = 2;
  p.stop_token_ids = {2};
  SamplingState st = state_for(p);
  EXPECT_EQ(sampler.sample(logits, p, st).token_id, 3);
  EXPECT_EQ(sampler.sample(logits, p, st).token_id, 3);
  EXPECT_EQ(sampler.sample(logits, p, st).token_id, 0);
  // ignore_eos: EOS is not a stop, so it is not masked; stop_token_ids still are.
  p.ignore_eos = true;
  SamplingState st2 = state_for(p);
  EXPECT_EQ(sampler.sample(logits, p, st2).token_id, 0);
  logits[0] = logits[1] = -1.0f;
  EXPECT_EQ(sampler.sample(logits, p, st2).token_id, 3);
}

TEST(Sampler, LogprobsAreRawLogSoftmaxDescending) {
  Sampler sampler(300, {});
  auto logits = random_logits(300, 21);
  SamplingParams p = seeded(6, 0.5f);
  p.logprobs = 300;
  p.repetition_penalty = 2.0f;  // processing must not change the reported logprobs
  SamplingState st = state_for(p);
  SampleResult r = sampler.sample(logits, p, st);
  ASSERT_TRUE(r.logprob.has_value());
  ASSERT_EQ(r.logprob->top.size(), 300u);
  double sum = 0;
  const float max = *std::max_element(logits.begin(), logits.end());
  double z = 0;
  for (float l : logits) z += std::exp(static_cast<double>(l) - max);
  for (size_t j = 0; j < r.logprob->top.size(); ++j) {
    const auto& e = r.logprob->top[j];
    sum += std::exp(static_cast<double>(e.logprob));
    EXPECT_NEAR(e.logprob, logits[e.token_id] - max - std::log(z), 1e-4);
    if (j > 0) {
      EXPECT_GE(r.logprob->top[j - 1].logprob, e.logprob);
    }
  }
  EXPECT_NEAR(sum, 1.0, 1e-4);
  EXPECT_EQ(r.logprob->token_id, r.token_id);
  EXPECT_NEAR(r.logprob->logprob, logits[r.token_id] - max - std::log(z), 1e-4);
  EXPECT_EQ(r.logprob->top[0].token_id,
            std::max_element(logits.begin(), logits.end()) - logits.begin());

  p.logprobs = 0;
  r = sampler.sample(logits, p, st);
  ASSERT_TRUE(r.logprob.has_value());
  EXPECT_TRUE(r.logprob->top.empty());
  p.logprobs = -1;
  EXPECT_FALSE(sampler.sample(logits, p, st).logprob.has_value());
}

TEST(Sampler, LargeVocabTopKTopPDrawsFromNucleus) {
  const int32_t kVocab = 49152;
  Sampler sampler(kVocab, {});
  SamplingParams p = seeded(8, 0.9f);
  p.top_k = 50;
  p.top_p = 0.9f;
  SamplingState st = state_for(p);
  for (int t = 0; t < 20; ++t) {
    auto logits = random_logits(kVocab, 500 + t);
    std::vector<int32_t> ids(kVocab);
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + 50, ids.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    const int32_t tok = sampler.sample(logits, p, st).token_id;
    EXPECT_TRUE(std::find(ids.begin(), ids.begin() + 50, tok) != ids.begin() + 50);
  }
}

// The documented draw, written out: the kept set by rank (logit desc, id asc), then the first
// kept id in ascending order whose cumulative weight exceeds u * total.
int32_t reference_draw(const std::vector<float>& logits, const SamplingParams& p, double u) {
  std::vector<int32_t> ranked(logits.size());
  std::iota(ranked.begin(), ranked.end(), 0);
  std::sort(ranked.begin(), ranked.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < ranked.size()) ranked.resize(p.top_k);
  const float max_logit = logits[ranked[0]], inv_t = 1.0f / p.temperature;
  std::vector<float> w(logits.size(), 0.0f);
  double z = 0;
  for (int32_t id : ranked) z += w[id] = std::exp((logits[id] - max_logit) * inv_t);
  size_t keep = ranked.size();
  if (p.top_p < 1.0f) {
    double before = 0;
    for (keep = 0; keep < ranked.size() && before < p.top_p * z; ++keep) before += w[ranked[keep]];
  }
  std::vector<int32_t> kept;
  for (size_t j = 0; j < keep; ++j) {
    if (w[ranked[j]] >= p.min_p) kept.push_back(ranked[j]);
  }
  std::sort(kept.begin(), kept.end());
  double total = 0, cum = 0;
  for (int32_t id : kept) total += w[id];
  for (int32_t id : kept) {
    if ((cum += w[id]) > u * total) return id;
  }
  return kept.back();
}

TEST(Sampler, DrawWalksKeptIdsInAscendingOrder) {
  // Weights 0.5 / 0.3 / 0.15 / 0.05 scattered so rank order and id order differ.
  std::vector<float> small = {std::log(0.05f), std::log(0.5f), std::log(0.15f), std::log(0.3f)};
  SamplingParams k3 = seeded(31);
  k3.top_k = 3;  // keeps ids 1, 3, 2; the draw walks 1, 2, 3
  Sampler sampler4(4, {});
  SamplingState st = state_for(k3);
  RequestRng rng(SamplingState::resolve_seed(k3, 0, 7, 0));
  int picked_2_inside = 0;
  for (int t = 0; t < 400; ++t) {
    const double u = rng.next_uniform();
    const double target = u * (0.5 + 0.15 + 0.3);
    const int32_t want = target < 0.5 ? 1 : target < 0.65 ? 2 : 3;
    picked_2_inside += want == 2;
    ASSERT_EQ(sampler4.sample(small, k3, st).token_id, want) << "draw " << t << " u " << u;
  }
  EXPECT_GT(picked_2_inside, 30);

  // Larger rows through every selection path (heap top_k, nth_element top_k, top_p, min_p).
  const int32_t kVocab = 3000;
  Sampler sampler(kVocab, {});
  for (int cfg = 0; cfg < 6; ++cfg) {
    SamplingParams p = seeded(40 + cfg, 0.5f + 0.25f * cfg);
    if (cfg == 1) p.top_k = 40;
    if (cfg == 2) p.top_k = 1200;
    if (cfg == 3) p.top_p = 0.8f;
    if (cfg == 4) p.top_k = 500, p.top_p = 0.95f, p.min_p = 0.01f;
    if (cfg == 5) p.min_p = 0.2f;
    SamplingState s = state_for(p);
    RequestRng r(SamplingState::resolve_seed(p, 0, 7, 0));
    for (int t = 0; t < 40; ++t) {
      const auto logits = random_logits(kVocab, 900 + 50 * cfg + t, 1.5f);
      const int32_t want = reference_draw(logits, p, r.next_uniform());
      ASSERT_EQ(sampler.sample(logits, p, s).token_id, want) << "config " << cfg << " step " << t;
    }
  }
}

TEST(Sampler, AllMaskedFallsBackToRawArgmax) {
  Sampler sampler(3, {0, 1, 2});
  SamplingParams p = seeded(1);
  p.min_tokens = 5;
  SamplingState st = state_for(p);
  EXPECT_EQ(sampler.sample(std::vector<float>{0.0f, 3.0f, 1.0f}, p, st).token_id, 1);
}

}  // namespace
}  // namespace llmserve
