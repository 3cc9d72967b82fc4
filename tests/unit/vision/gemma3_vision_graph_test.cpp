// Gemma 3 with images through the Llama graph on the CPU backend, against transformers'
// Gemma3ForConditionalGeneration on the tiny random model (make_tiny_gemma3_vision.py): the
// chat prompts as the HF processor expanded them (<start_of_image>, 4 soft tokens,
// <end_of_image>), the soft tokens' rows replaced by our encoder's projected features
// (ForwardBatch::input_embeddings) and attending their whole image (ForwardBatch::attend_end),
// logits at every position within 1e-4 of transformers' f32 forward, prefilled at once and in
// chunks that never split an image, and the greedy tokens equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/runner/batch_builder.h"
#include "engine/runner/model_runner.h"
#include "engine/vision/vision_model.h"
#include "llmserve/kernels/softmax.h"
#include "tests/unit/vision/vision_fixture.h"

namespace llmserve::vision {
namespace {

using nlohmann::json;

// One chat prompt with its images' features and the per-row image inputs.
struct Prompt {
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> features;  // per image [mm_tokens, text_hidden]
  std::vector<const float*> row_embedding;   // [T]: null or a soft token's features row
  std::vector<int32_t> image_end;            // [T]: the end of the row's image, or 0
  std::vector<int32_t> greedy;
};

class Gemma3VisionGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = testing::fixture_dir();
    ModelRunnerOptions o;
    o.model_path = dir;
    o.num_threads = 2;
    o.block_size = 4;  // images straddle block edges
    o.kv_cache_bytes = 16ull << 20;
    o.kv_cache_dtype = kernels::KvDtype::kF32;
    o.max_tokens_per_step = 128;
    o.max_samples_per_step = 128;
    o.max_model_len = 256;
    auto r = ModelRunner::create(o);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    runner = std::move(*r);
    auto v = VisionModel::load(dir);
    ASSERT_TRUE(v.is_ok()) << v.status().to_string();
    vision = std::move(*v);
    exp = testing::expected();
    V = runner->config().vocab_size;
    ASSERT_EQ(V, exp["vocab_size"].get<int64_t>());
  }

  // The prompt's images encoded by our tower from their files (decode + preprocess + encode).
  Prompt prompt(size_t i) {
    const json& p = exp["prompts"][i];
    Prompt out;
    out.ids = p["input_ids"].get<std::vector<int32_t>>();
    out.greedy = p["greedy_tokens"].get<std::vector<int32_t>>();
    for (const auto& name : p["images"]) {
      auto img = decode_image(testing::image_bytes(name.get<std::string>()), ImageLimits{});
      EXPECT_TRUE(img.is_ok());
      auto f = vision->encode_image(pool, *img);
      EXPECT_TRUE(f.is_ok());
      out.features.push_back(std::move(*f));
    }
    const auto tt = p["token_type_ids"].get<std::vector<int>>();
    const int64_t H = vision->config().text_hidden;
    out.row_embedding.assign(out.ids.size(), nullptr);
    out.image_end.assign(out.ids.size(), 0);
    int image = -1;
    for (size_t t = 0; t < tt.size(); ++t) {
      if (tt[t] != 1) continue;
      size_t end = t;
      while (end < tt.size() && tt[end] == 1) ++end;
      ++image;
      for (size_t j = t; j < end; ++j) {
        EXPECT_EQ(out.ids[j], vision->config().image_token_id);
        out.row_embedding[j] = out.features[static_cast<size_t>(image)].data() + (j - t) * H;
        out.image_end[j] = static_cast<int32_t>(end);
      }
      t = end - 1;
    }
    EXPECT_EQ(static_cast<size_t>(image + 1), out.features.size());
    return out;
  }

  // Logits of every position, prefilled in chunks that end at `cuts` (and the prompt's end).
  std::vector<float> prefill(const Prompt& p, std::vector<int32_t> cuts,
                             bool bidirectional = true) {
    const int32_t T = static_cast<int32_t>(p.ids.size());
    cuts.push_back(T);
    const auto table = contiguous_block_table(0, T, runner->block_size());
    std::vector<float> out(static_cast<size_t>(T * V));
    BatchBuilder builder(runner->block_size());
    int32_t start = 0;
    for (int32_t cut : cuts) {
      const int32_t n = cut - start;
      BatchEntry e{p.ids, start, n, table, true};
      e.num_prompt = T;
      auto batch = builder.build(std::span(&e, 1));
      EXPECT_TRUE(batch.is_ok()) << batch.status().to_string();
      std::vector<int32_t> rows(static_cast<size_t>(n));
      std::vector<const float*> emb(static_cast<size_t>(n));
      std::vector<int32_t> ends(static_cast<size_t>(n));
      for (int32_t i = 0; i < n; ++i) {
        rows[i] = i;
        emb[i] = p.row_embedding[start + i];
        ends[i] =
            bidirectional && p.image_end[start + i] > 0 ? p.image_end[start + i] : start + i + 1;
      }
      ForwardBatch fb = *batch;
      fb.sample_rows = rows;
      fb.input_embeddings = emb;
      fb.attend_end = ends;
      auto logits = runner->execute(fb);
      EXPECT_TRUE(logits.is_ok()) << logits.status().to_string();
      if (!logits.is_ok()) return {};
      std::copy(logits->begin(), logits->end(), out.begin() + static_cast<int64_t>(start) * V);
      start = cut;
    }
    return out;
  }

  double max_diff(const std::vector<float>& got, size_t offset) {
    const std::vector<float> want =
        testing::read_f32(testing::fixture_dir() + "/expected_logits.f32");
    double worst = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::fabs(got[i] - want[offset + i])));
    }
    return worst;
  }

  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<VisionModel> vision;
  kernels::ThreadPool pool{2};
  json exp;
  int64_t V = 0;
};

TEST_F(Gemma3VisionGraph, LogitsAtEveryPositionEqualTransformers) {
  size_t offset = 0;
  for (size_t i = 0; i < exp["prompts"].size(); ++i) {
    const Prompt p = prompt(i);
    const std::vector<float> at_once = prefill(p, {});
    EXPECT_LT(max_diff(at_once, offset), 1e-4) << "prompt " << i << " at once";
    // Chunks of about 5 tokens, each cut moved past any image it would split.
    std::vector<int32_t> cuts;
    for (int32_t c = 5; c < static_cast<int32_t>(p.ids.size()); c += 5) {
      while (c < static_cast<int32_t>(p.ids.size()) && p.image_end[c] > 0 && p.image_end[c - 1] > 0)
        ++c;
      if (c < static_cast<int32_t>(p.ids.size()) && (cuts.empty() || c > cuts.back()))
        cuts.push_back(c);
    }
    const std::vector<float> chunked = prefill(p, cuts);
    EXPECT_LT(max_diff(chunked, offset), 1e-4) << "prompt " << i << " in chunks";
    offset += p.ids.size() * static_cast<size_t>(V);
  }
}

// Without the bidirectional span (causal inside the image) the logits move: the fixture shows it.
TEST_F(Gemma3VisionGraph, AttendingTheWholeImageMatters) {
  const Prompt p = prompt(0);
  EXPECT_GT(max_diff(prefill(p, {}, /*bidirectional=*/false), 0), 1e-2);
}

TEST_F(Gemma3VisionGraph, GreedyTokensEqualTransformers) {
  for (size_t i = 0; i < exp["prompts"].size(); ++i) {
    const Prompt p = prompt(i);
    const std::vector<float> logits = prefill(p, {});
    std::vector<int32_t> tokens = p.ids;
    tokens.push_back(static_cast<int32_t>(
        kernels::argmax(logits.data() + (p.ids.size() - 1) * static_cast<size_t>(V), V)));
    const auto table = contiguous_block_table(
        0, static_cast<int64_t>(tokens.size() + p.greedy.size()), runner->block_size());
    BatchBuilder builder(runner->block_size());
    while (tokens.size() < p.ids.size() + p.greedy.size()) {
      BatchEntry e{tokens, static_cast<int32_t>(tokens.size()) - 1, 1, table, true};
      e.num_prompt = static_cast<int32_t>(p.ids.size());
      auto batch = builder.build(std::span(&e, 1));
      ASSERT_TRUE(batch.is_ok());
      auto l = runner->execute(*batch);
      ASSERT_TRUE(l.is_ok()) << l.status().to_string();
      tokens.push_back(static_cast<int32_t>(kernels::argmax(l->data(), V)));
    }
    const std::vector<int32_t> got(tokens.begin() + static_cast<int64_t>(p.ids.size()),
                                   tokens.end());
    EXPECT_EQ(got, p.greedy) << "prompt " << i;
  }
}

// The engine's path: BatchEntry::image_spans / image_features (the batch builder fills the
// image rows with fill_image_rows), chunks cut by image_safe_chunk_end with a budget of 5, and
// the second prompt batched beside the first: logits within 1e-4 of transformers.
TEST_F(Gemma3VisionGraph, BatchBuilderImageEntriesInSafeChunksEqualTransformers) {
  const Prompt p0 = prompt(0), p1 = prompt(1);
  const std::vector<float> want =
      testing::read_f32(testing::fixture_dir() + "/expected_logits.f32");
  const int64_t H = vision->config().text_hidden;
  struct Seq {
    const Prompt* p;
    std::vector<ImageSpan> spans;
    std::vector<const float*> features;
    std::vector<int32_t> table;
    int32_t done = 0;
    size_t offset = 0;  // into the expected logits
    std::vector<float> logits;
  };
  std::vector<Seq> seqs(2);
  seqs[0].p = &p0;
  seqs[1].p = &p1;
  seqs[1].offset = p0.ids.size() * static_cast<size_t>(V);
  int32_t first_block = 0;
  for (Seq& q : seqs) {
    q.spans = find_image_spans(q.p->ids, vision->config().image_token_id);
    ASSERT_EQ(q.spans.size(), q.p->features.size());
    for (const auto& f : q.p->features) q.features.push_back(f.data());
    const auto T = static_cast<int64_t>(q.p->ids.size());
    q.table = contiguous_block_table(first_block, T, runner->block_size());
    first_block += static_cast<int32_t>(q.table.size());
    q.logits.assign(q.p->ids.size() * static_cast<size_t>(V), 0.0f);
  }
  BatchBuilder builder(runner->block_size());
  bool image_steps = false;
  while (seqs[0].done < static_cast<int32_t>(p0.ids.size()) ||
         seqs[1].done < static_cast<int32_t>(p1.ids.size())) {
    std::vector<BatchEntry> entries;
    std::vector<Seq*> who;
    for (Seq& q : seqs) {
      const auto T = static_cast<int32_t>(q.p->ids.size());
      if (q.done >= T) continue;
      const int32_t end = image_safe_chunk_end(q.spans, q.done, std::min(q.done + 5, T));
      BatchEntry e{q.p->ids, q.done, end - q.done, q.table, false};
      e.num_prompt = T;
      e.image_spans = q.spans;
      e.image_features = q.features;
      e.image_hidden = H;
      entries.push_back(e);
      who.push_back(&q);
    }
    auto batch = builder.build(entries);
    ASSERT_TRUE(batch.is_ok()) << batch.status().to_string();
    ForwardBatch fb = *batch;
    image_steps = image_steps || !fb.input_embeddings.empty();
    std::vector<int32_t> rows(fb.token_ids.size());
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(i);
    fb.sample_rows = rows;
    auto logits = runner->execute(fb);
    ASSERT_TRUE(logits.is_ok()) << logits.status().to_string();
    // The builder puts one-token chunks after a computed prefix (decode rows) first.
    std::vector<size_t> order;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t k = 0; k < entries.size(); ++k) {
        const bool decode = entries[k].num_new == 1 && entries[k].num_computed > 0;
        if (decode == (pass == 0)) order.push_back(k);
      }
    }
    size_t row = 0;
    for (size_t k : order) {
      Seq& q = *who[k];
      std::copy_n(logits->begin() + static_cast<int64_t>(row) * V,
                  static_cast<int64_t>(entries[k].num_new) * V,
                  q.logits.begin() + static_cast<int64_t>(q.done) * V);
      row += static_cast<size_t>(entries[k].num_new);
      q.done += entries[k].num_new;
    }
  }
  EXPECT_TRUE(image_steps);
  for (const Seq& q : seqs) EXPECT_LT(max_diff(q.logits, q.offset), 1e-4);
  // A chunk that splits an image is refused by the builder.
  BatchEntry bad{p0.ids, 0, seqs[0].spans[0].start + 1, seqs[0].table, false};
  bad.image_spans = seqs[0].spans;
  bad.image_features = seqs[0].features;
  bad.image_hidden = H;
  EXPECT_FALSE(builder.build(std::span(&bad, 1)).is_ok());
}

TEST_F(Gemma3VisionGraph, AttendEndPastTheSequenceIsRefused) {
  const Prompt p = prompt(0);
  const int32_t T = static_cast<int32_t>(p.ids.size());
  const auto table = contiguous_block_table(0, T, runner->block_size());
  BatchBuilder builder(runner->block_size());
  BatchEntry e{p.ids, 0, T, table, true};
  auto batch = builder.build(std::span(&e, 1));
  ASSERT_TRUE(batch.is_ok());
  std::vector<int32_t> ends(static_cast<size_t>(T));
  for (int32_t t = 0; t < T; ++t) ends[t] = t + 1;
  ends[3] = T + 1;
  ForwardBatch fb = *batch;
  fb.attend_end = ends;
  auto l = runner->execute(fb);
  ASSERT_FALSE(l.is_ok());
  EXPECT_NE(l.status().message().find("attend_end"), std::string::npos);
}

}  // namespace
}  // namespace llmserve::vision
