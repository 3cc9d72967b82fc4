// Image placement against the HF Gemma 3 processor's expansion and token_type_ids
// (make_tiny_gemma3_vision.py), chunk ends that never split an image, per-row image inputs, and
// the content hash.
#include "engine/vision/image_placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/vision/vision_fixture.h"

namespace llmserve::vision {
namespace {

TEST(ImagePlacement, ExpansionEqualsTheHfProcessor) {
  const auto exp = testing::expected();
  ImageTokenText t;
  t.count = exp["mm_tokens_per_image"].get<int64_t>();
  for (const auto& p : exp["prompts"]) {
    int64_t n = 0;
    EXPECT_EQ(expand_image_placeholders(p["text"].get<std::string>(), t, &n),
              p["expanded_text"].get<std::string>());
    EXPECT_EQ(n, static_cast<int64_t>(p["images"].size()));
  }
}

TEST(ImagePlacement, SpansEqualTheProcessorsTokenTypes) {
  const auto exp = testing::expected();
  const int32_t soft = exp["special_ids"]["<image_soft_token>"].get<int32_t>();
  for (const auto& p : exp["prompts"]) {
    const auto ids = p["input_ids"].get<std::vector<int32_t>>();
    const auto tt = p["token_type_ids"].get<std::vector<int>>();
    const auto spans = find_image_spans(ids, soft);
    EXPECT_EQ(spans.size(), p["images"].size());
    std::vector<int> marked(ids.size(), 0);
    for (const ImageSpan& s : spans) {
      EXPECT_EQ(s.length, exp["mm_tokens_per_image"].get<int32_t>());
      for (int32_t i = s.start; i < s.end(); ++i) marked[static_cast<size_t>(i)] = 1;
    }
    EXPECT_EQ(marked, tt);
  }
}

TEST(ImagePlacement, ChunkEndsNeverSplitAnImage) {
  const std::vector<ImageSpan> spans = {{5, 4}, {15, 4}};
  EXPECT_EQ(image_safe_chunk_end(spans, 0, 7), 5);    // moved back to the image's start
  EXPECT_EQ(image_safe_chunk_end(spans, 0, 5), 5);    // ends just before it
  EXPECT_EQ(image_safe_chunk_end(spans, 0, 9), 9);    // takes it whole
  EXPECT_EQ(image_safe_chunk_end(spans, 5, 7), 9);    // starts at it: the whole image
  EXPECT_EQ(image_safe_chunk_end(spans, 9, 17), 15);  // the second one
  EXPECT_EQ(image_safe_chunk_end(spans, 0, 30), 30);
  EXPECT_EQ(image_safe_chunk_end({}, 0, 3), 3);
}

TEST(ImagePlacement, RowsOfAChunkPointIntoTheirImage) {
  const std::vector<ImageSpan> spans = {{2, 3}, {7, 2}};
  std::vector<float> a(3 * 4), b(2 * 4);
  const float* feats[] = {a.data(), b.data()};
  std::vector<const float*> emb;
  std::vector<int32_t> ends;
  fill_image_rows(spans, feats, 4, 1, 8, emb, ends);  // rows 1..8
  const std::vector<const float*> want_emb = {nullptr, a.data(), a.data() + 4, a.data() + 8,
                                              nullptr, nullptr,  b.data(),     b.data() + 4};
  const std::vector<int32_t> want_end = {2, 5, 5, 5, 6, 7, 9, 9};
  EXPECT_EQ(emb, want_emb);
  EXPECT_EQ(ends, want_end);
}

TEST(ImagePlacement, ContentHashFollowsThePixels) {
  auto a = decode_image(testing::image_bytes("rgb.jpg"), ImageLimits{});
  auto a2 = decode_image(testing::image_bytes("rgb.jpg"), ImageLimits{});
  auto b = decode_image(testing::image_bytes("rgb.webp"), ImageLimits{});
  ASSERT_TRUE(a.is_ok() && a2.is_ok() && b.is_ok());
  EXPECT_EQ(image_content_hash(*a), image_content_hash(*a2));
  EXPECT_NE(image_content_hash(*a), image_content_hash(*b));
  RgbImage c = *a;
  c.pixels[100] ^= 1;
  EXPECT_NE(image_content_hash(*a), image_content_hash(c));
  RgbImage d = *a;  // same bytes, another shape
  std::swap(d.width, d.height);
  EXPECT_NE(image_content_hash(*a), image_content_hash(d));
}

}  // namespace
}  // namespace llmserve::vision
