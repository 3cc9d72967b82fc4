// Decoding + ImagePreprocessor against the pixel_values of transformers' Gemma 3 image processor
// (tests/reference/make_tiny_gemma3_vision.py). The decoders and the resampling arithmetic are
// Pillow's, so values are equal, except that Pillow 13 runs the vertical pass first for some
// sizes (resize_image always runs the horizontal one first, as older Pillow and torch's uint8
// antialiased resize do): then some bytes differ by one step, 2 / 255 after normalisation.
#include "engine/vision/image_preprocessor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tests/unit/vision/vision_fixture.h"

namespace llmserve::vision {
namespace {

TEST(ImagePreprocessor, ReadsTheFixtureProcessorConfig) {
  auto p = ImagePreprocessor::from_dir(testing::fixture_dir());
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->height, 56);
  EXPECT_EQ(p->width, 56);
  EXPECT_EQ(p->resample, ResampleFilter::kBilinear);
  EXPECT_DOUBLE_EQ(p->mean[1], 0.5);
  EXPECT_DOUBLE_EQ(p->std[2], 0.5);
  EXPECT_NEAR(p->rescale_factor, 1.0 / 255.0, 1e-12);
}

TEST(ImagePreprocessor, PixelValuesEqualTheHfProcessor) {
  const auto exp = testing::expected();
  auto pre = ImagePreprocessor::from_dir(testing::fixture_dir());
  ASSERT_TRUE(pre.is_ok());
  const std::vector<float> want = testing::read_f32(testing::fixture_dir() + "/pixel_values.f32");
  const size_t per = 3 * 56 * 56;
  ASSERT_EQ(want.size(), per * exp["images"].size());
  for (size_t i = 0; i < exp["images"].size(); ++i) {
    const std::string name = exp["images"][i];
    auto img = decode_image(testing::image_bytes(name), ImageLimits{});
    ASSERT_TRUE(img.is_ok()) << name << ": " << img.status().to_string();
    auto got = pre->process(*img);
    ASSERT_TRUE(got.is_ok()) << name;
    ASSERT_EQ(got->size(), per);
    float max_diff = 0.0f;
    size_t off_by_one_step = 0;
    for (size_t j = 0; j < per; ++j) {
      const float d = std::fabs((*got)[j] - want[i * per + j]);
      max_diff = std::max(max_diff, d);
      if (d > 1e-6f) ++off_by_one_step;
    }
    const float step = 1.0f / 255.0f / 0.5f;  // one 8-bit step through rescale and std 0.5
    EXPECT_LE(max_diff, step * 1.0001f) << name << ": " << off_by_one_step << " values differ";
    if (name != "rgba.png") {  // the one fixture size where Pillow 13 goes vertical first
      EXPECT_LE(max_diff, 1e-6f) << name << ": " << off_by_one_step << " values differ";
    } else {
      EXPECT_LT(off_by_one_step, per / 3) << name;
    }
  }
}

TEST(ImagePreprocessor, RefusesWhatItDoesNotImplementNamingTheKey) {
  auto pas = ImagePreprocessor::from_json(R"({"do_pan_and_scan": true})", "cfg");
  ASSERT_FALSE(pas.is_ok());
  EXPECT_NE(pas.status().message().find("do_pan_and_scan"), std::string::npos);
  auto nearest = ImagePreprocessor::from_json(R"({"resample": 0})", "cfg");
  ASSERT_FALSE(nearest.is_ok());
  EXPECT_NE(nearest.status().message().find("resample 0"), std::string::npos);
  auto bad_std = ImagePreprocessor::from_json(R"({"image_std": [0.5, 0, 0.5]})", "cfg");
  ASSERT_FALSE(bad_std.is_ok());
  EXPECT_NE(bad_std.status().message().find("image_std"), std::string::npos);
  auto bad_size = ImagePreprocessor::from_json(R"({"size": {"height": 0, "width": 4}})", "cfg");
  ASSERT_FALSE(bad_size.is_ok());
  EXPECT_NE(bad_size.status().message().find("size"), std::string::npos);
}

}  // namespace
}  // namespace llmserve::vision
