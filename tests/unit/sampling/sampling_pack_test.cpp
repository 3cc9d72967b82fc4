// The device sampler's host packing: every parameter, the sparse edits as the CPU processors
// would apply them at this step, and the bounds.
#include "engine/runner/sampling_pack.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "engine/grammar/grammar_compiler.h"
#include "engine/grammar/token_bitmask.h"
#include "engine/runner/logits_processor.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;

constexpr int32_t kVocab = 1000;

SamplingPackLimits limits(int32_t rows = 8, int32_t sparse = 4096, int32_t top = 20) {
  SamplingPackLimits l;
  l.max_rows = rows;
  l.max_sparse_entries = sparse;
  l.max_top_logprobs = top;
  return l;
}

SamplingPack pack_one(const SamplingParams& p, SamplingState& st,
                      std::vector<int32_t> eos = {0, 1}) {
  SampleRow row{nullptr, &p, &st};
  SamplingPack pack;
  EXPECT_TRUE(pack_sampling_rows({&row, 1}, eos, kVocab, limits(), pack).is_ok());
  return pack;
}

// The edits a packed row carries, applied on the CPU in the kernel's order (the twin of the
// device's processing phase, f32 without contraction as the CPU processors).
void apply_packed(const kc::SamplingRow& r, const SamplingPack& pack, std::vector<float>& x) {
  for (int32_t j = 0; j < r.bias_count; ++j) {
    const kc::LogitBias& b = pack.biases[r.bias_offset + j];
    x[b.id] += b.value;
  }
  for (int32_t j = 0; j < r.mask_count; ++j)
    x[pack.masked[r.mask_offset + j]] = -std::numeric_limits<float>::infinity();
  for (int32_t j = 0; j < r.penalty_count; ++j) {
    const kc::PenaltyToken& t = pack.penalties[r.penalty_offset + j];
    float v = x[t.id];
    if (r.repetition_penalty != 1.0f && (t.in_prompt || t.output_count > 0))
      v = v > 0 ? v / r.repetition_penalty : v * r.repetition_penalty;
    if (t.output_count > 0 && (r.presence_penalty != 0.0f || r.frequency_penalty != 0.0f))
      v -= r.presence_penalty + r.frequency_penalty * static_cast<float>(t.output_count);
    x[t.id] = v;
  }
}

TEST(SamplingPack, EveryScalarParameter) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  p.repetition_penalty = 1.2f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = -0.25f;
  p.logprobs = 5;
  p.seed = 1234;
  SamplingState st(p, std::vector<int32_t>{4, 5}, 99);
  st.append(7);
  st.append(8);
  st.append(7);
  const SamplingPack pack = pack_one(p, st);
  ASSERT_EQ(pack.rows.size(), 1u);
  const kc::SamplingRow& r = pack.rows[0];
  EXPECT_EQ(r.greedy, 0);
  EXPECT_EQ(r.inv_temperature, 1.0f / 0.7f);
  EXPECT_EQ(r.top_k, 40);
  EXPECT_EQ(r.top_p, 0.9f);
  EXPECT_EQ(r.min_p, 0.05f);
  EXPECT_EQ(r.repetition_penalty, 1.2f);
  EXPECT_EQ(r.presence_penalty, 0.5f);
  EXPECT_EQ(r.frequency_penalty, -0.25f);
  EXPECT_EQ(r.num_logprobs, 5);
  EXPECT_EQ(pack.max_num_top, 5);
  EXPECT_EQ(r.rng_key, RequestRng(99).key());
  EXPECT_EQ(r.rng_counter, 3u);
  // The device draw is the CPU's: counter = num_generated.
  RequestRng rng(99);
  rng.set_counter(r.rng_counter);
  const double want = rng.next_uniform();
  st.rng().set_counter(3);
  EXPECT_EQ(st.rng().next_uniform(), want);
}

TEST(SamplingPack, GreedyThresholdAndLogprobsOff) {
  for (float t : {0.0f, 1e-6f, 1e-5f, 2.0f}) {
    SamplingParams p;
    p.temperature = t;
    SamplingState st(p, {}, 1);
    const SamplingPack pack = pack_one(p, st);
    const bool greedy = t < Sampler::kGreedyTemperature;
    EXPECT_EQ(pack.rows[0].greedy, greedy ? 1 : 0) << t;
    EXPECT_EQ(pack.rows[0].inv_temperature, greedy ? 1.0f : 1.0f / t) << t;
    EXPECT_EQ(pack.rows[0].num_logprobs, -1);
    EXPECT_EQ(pack.max_num_top, 0);
    EXPECT_EQ(pack.rows[0].bias_count + pack.rows[0].mask_count + pack.rows[0].penalty_count, 0);
  }
}

TEST(SamplingPack, MinTokensMasksOnlyWhileShort) {
  SamplingParams p;
  p.min_tokens = 2;
  p.stop_token_ids = {5, kVocab + 3, -1};
  SamplingState st(p, {}, 1);
  for (int step = 0; step < 4; ++step) {
    const SamplingPack pack = pack_one(p, st, {0, 1});
    const kc::SamplingRow& r = pack.rows[0];
    if (step < 2) {
      ASSERT_EQ(r.mask_count, 3) << step;
      EXPECT_EQ(std::vector<int32_t>(pack.masked.begin(), pack.masked.end()),
                (std::vector<int32_t>{5, 0, 1}));
    } else {
      EXPECT_EQ(r.mask_count, 0) << step;
    }
    st.append(9);
  }
}

TEST(SamplingPack, IgnoreEosKeepsEosUnmasked) {
  SamplingParams p;
  p.min_tokens = 1;
  p.ignore_eos = true;
  p.stop_token_ids = {6};
  SamplingState st(p, {}, 1);
  const SamplingPack pack = pack_one(p, st, {0, 1});
  EXPECT_EQ(pack.masked, (std::vector<int32_t>{6}));
}

TEST(SamplingPack, BiasEntriesInRangeWithRowOffsets) {
  SamplingParams a, b;
  a.logit_bias = {{-2, 1.0f}, {3, 2.5f}, {kVocab - 1, -100.0f}, {kVocab, 7.0f}};
  b.logit_bias = {{10, 0.5f}};
  SamplingState sa(a, {}, 1), sb(b, {}, 2);
  std::vector<SampleRow> rows = {{nullptr, &a, &sa}, {nullptr, &b, &sb}, {nullptr, &a, &sa}};
  SamplingPack pack;
  ASSERT_TRUE(pack_sampling_rows(rows, {}, kVocab, limits(), pack).is_ok());
  ASSERT_EQ(pack.biases.size(), 5u);
  EXPECT_EQ(pack.rows[0].bias_offset, 0);
  EXPECT_EQ(pack.rows[0].bias_count, 2);
  EXPECT_EQ(pack.rows[1].bias_offset, 2);
  EXPECT_EQ(pack.rows[1].bias_count, 1);
  EXPECT_EQ(pack.rows[2].bias_offset, 3);
  EXPECT_EQ(pack.biases[0].id, 3);
  EXPECT_EQ(pack.biases[0].value, 2.5f);
  EXPECT_EQ(pack.biases[1].id, kVocab - 1);
  EXPECT_EQ(pack.biases[2].id, 10);
  EXPECT_NE(pack.rows[0].rng_key, pack.rows[1].rng_key);
}

TEST(SamplingPack, PenaltyTokensCarryCountsAndPromptMembership) {
  SamplingParams p;
  p.repetition_penalty = 1.3f;
  SamplingState st(p, std::vector<int32_t>{3, 1, 3, 7, kVocab + 5}, 1);
  for (int32_t t : {7, 2, 2, kVocab + 9}) st.append(t);
  SamplingPack pack = pack_one(p, st);
  ASSERT_EQ(pack.penalties.size(), 4u);
  const std::vector<std::array<int32_t, 3>> want = {{1, 0, 1}, {2, 2, 0}, {3, 0, 1}, {7, 1, 1}};
  for (size_t j = 0; j < want.size(); ++j) {
    EXPECT_EQ(pack.penalties[j].id, want[j][0]) << j;
    EXPECT_EQ(pack.penalties[j].output_count, want[j][1]) << j;
    EXPECT_EQ(pack.penalties[j].in_prompt, want[j][2]) << j;
  }
  // Presence / frequency alone: the output ids only (the prompt is not tracked).
  SamplingParams q;
  q.presence_penalty = 0.4f;
  SamplingState sq(q, std::vector<int32_t>{3, 7}, 1);
  for (int32_t t : {7, 2, 2}) sq.append(t);
  pack = pack_one(q, sq);
  ASSERT_EQ(pack.penalties.size(), 2u);
  EXPECT_EQ(pack.penalties[0].id, 2);
  EXPECT_EQ(pack.penalties[0].output_count, 2);
  EXPECT_EQ(pack.penalties[1].id, 7);
  EXPECT_EQ(pack.penalties[1].in_prompt, 0);
  // No penalty on: nothing, even with a history.
  SamplingParams none;
  SamplingState sn(none, std::vector<int32_t>{3}, 1);
  sn.append(3);
  EXPECT_TRUE(pack_one(none, sn).penalties.empty());
}

// The packed edits reproduce apply_logits_processors bit for bit over random requests.
TEST(SamplingPack, PackedEditsEqualCpuProcessors) {
  std::mt19937 gen(5);
  std::uniform_int_distribution<int32_t> id(-3, kVocab + 3);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  const std::vector<int32_t> eos = {0, 2};
  for (int trial = 0; trial < 300; ++trial) {
    SamplingParams p;
    p.repetition_penalty = trial % 3 == 0 ? 1.0f : 0.5f + 0.01f * static_cast<float>(trial % 90);
    p.presence_penalty = trial % 4 == 0 ? 0.0f : 0.3f;
    p.frequency_penalty = trial % 5 == 0 ? 0.0f : -0.7f + 0.01f * static_cast<float>(trial % 50);
    for (int j = 0; j < trial % 6; ++j) p.logit_bias[id(gen)] = logit(gen);
    p.min_tokens = trial % 7;
    p.ignore_eos = trial % 2 == 0;
    for (int j = 0; j < trial % 3; ++j) p.stop_token_ids.push_back(id(gen));
    std::vector<int32_t> prompt;
    for (int j = 0; j < 20; ++j) prompt.push_back(id(gen) / 10);  // repeats
    SamplingState st(p, prompt, 1);
    for (int j = 0; j < trial % 12; ++j) st.append(id(gen) / 10);
    std::vector<float> want(kVocab);
    for (float& v : want) v = logit(gen);
    std::vector<float> got = want;
    apply_logits_processors(want, p, st, eos);
    const SamplingPack pack = pack_one(p, st, eos);
    apply_packed(pack.rows[0], pack, got);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
        << "trial " << trial;
  }
}

TEST(SamplingPack, GrammarRowsCarryTheirMatchersMask) {
  testing::FakeTokenizer tok;
  constexpr int32_t kVocab = 300;
  GrammarCompiler compiler(tok, kVocab, {});
  GrammarSpec spec;
  spec.kind = GrammarKind::kRegex;
  spec.text = "x[yz]";
  auto g =
      compiler.compile_and_wait(spec, std::chrono::steady_clock::now() + std::chrono::seconds(60));
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  SamplingParams p;
  SamplingState free(p, {}, 1), first(p, {}, 2), second(p, {}, 3);
  first.set_matcher((*g)->make_matcher());
  second.set_matcher((*g)->make_matcher());
  ASSERT_TRUE(second.matcher()->accept(tok.bytes_of("x")[0]));
  const std::vector<SampleRow> rows = {
      {nullptr, &p, &free}, {nullptr, &p, &first}, {nullptr, &p, &second}};
  SamplingPack pack;
  SamplingPackLimits limits;
  limits.max_rows = 4;
  limits.max_sparse_entries = 64;
  ASSERT_TRUE(pack_sampling_rows(rows, {}, kVocab, limits, pack).is_ok());
  const size_t words = static_cast<size_t>(token_bitmask_words(kVocab));
  EXPECT_EQ(pack.rows[0].grammar_mask, -1);
  EXPECT_EQ(pack.rows[1].grammar_mask, 0);
  EXPECT_EQ(pack.rows[2].grammar_mask, 1);
  ASSERT_EQ(pack.num_grammar_rows, 2);
  ASSERT_EQ(pack.grammar_masks.size(), 2 * words);
  auto allowed = [&](int row) {
    std::vector<int32_t> ids;
    std::span<const uint32_t> m(pack.grammar_masks.data() + row * words, words);
    for (int32_t id = 0; id < kVocab; ++id) {
      if (token_allowed(m, id)) ids.push_back(id);
    }
    return ids;
  };
  EXPECT_EQ(allowed(0), std::vector<int32_t>({tok.bytes_of("x")[0]}));
  EXPECT_EQ(allowed(1), std::vector<int32_t>({tok.bytes_of("y")[0], tok.bytes_of("z")[0]}));
  EXPECT_EQ(first.matcher()->num_accepted(), 0);  // packing moves no state
}

TEST(SamplingPack, BoundsAreChecked) {
  SamplingParams p;
  SamplingState st(p, {}, 1);
  SampleRow row{nullptr, &p, &st};
  std::vector<SampleRow> three(3, row);
  SamplingPack pack;
  EXPECT_EQ(pack_sampling_rows(three, {}, kVocab, limits(2), pack).code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(pack_sampling_rows(three, {}, kVocab, limits(3), pack).is_ok());
  EXPECT_EQ(pack.rows.size(), 3u);
  EXPECT_EQ(pack_sampling_rows(three, {}, 0, limits(3), pack).code(), StatusCode::kInvalidArgument);
  SampleRow no_state{nullptr, &p, nullptr};
  EXPECT_EQ(pack_sampling_rows({&no_state, 1}, {}, kVocab, limits(), pack).code(),
            StatusCode::kInvalidArgument);

  SamplingParams lp;
  lp.logprobs = 21;
  SampleRow lp_row{nullptr, &lp, &st};
  EXPECT_EQ(pack_sampling_rows({&lp_row, 1}, {}, kVocab, limits(), pack).code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(pack_sampling_rows({&lp_row, 1}, {}, kVocab, limits(8, 16, 21), pack).is_ok());

  // Sparse entries count over all rows: 2 rows x 3 biases against a limit of 5.
  SamplingParams b;
  b.logit_bias = {{1, 1.0f}, {2, 1.0f}, {3, 1.0f}};
  SampleRow b_row{nullptr, &b, &st};
  std::vector<SampleRow> two(2, b_row);
  EXPECT_EQ(pack_sampling_rows(two, {}, kVocab, limits(8, 5), pack).code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(pack_sampling_rows(two, {}, kVocab, limits(8, 6), pack).is_ok());
  SamplingParams m;
  m.min_tokens = 1;
  m.stop_token_ids = {4, 5, 6};
  SampleRow m_row{nullptr, &m, &st};
  const std::vector<int32_t> eos = {7};
  EXPECT_EQ(pack_sampling_rows({&m_row, 1}, eos, kVocab, limits(8, 3), pack).code(),
            StatusCode::kResourceExhausted);
  SamplingParams rp;
  rp.repetition_penalty = 1.1f;
  SamplingState rs(rp, std::vector<int32_t>{1, 2, 3, 4}, 1);
  SampleRow r_row{nullptr, &rp, &rs};
  EXPECT_EQ(pack_sampling_rows({&r_row, 1}, {}, kVocab, limits(8, 3), pack).code(),
            StatusCode::kResourceExhausted);

  EXPECT_EQ(limits(0).validate().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(limits(1, -1).validate().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(limits(1, 0, kc::kMaxTopLogprobs + 1).validate().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(limits(1, 0, kc::kMaxTopLogprobs).validate().is_ok());
}

}  // namespace
}  // namespace llmserve
