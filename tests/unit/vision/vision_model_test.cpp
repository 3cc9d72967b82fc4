// The SigLIP tower and Gemma 3 projector against transformers' get_image_features on the tiny
// random Gemma 3 (tests/reference/make_tiny_gemma3_vision.py): from the HF processor's pixel
// values (the encoder alone) and from the image files (decoding + preprocessing + encoder).
#include "engine/vision/vision_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tests/unit/vision/vision_fixture.h"

namespace llmserve::vision {
namespace {

using testing::rel_diff;

class VisionModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = VisionModel::load(testing::fixture_dir());
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    model = std::move(*m);
  }
  std::unique_ptr<VisionModel> model;
  kernels::ThreadPool pool{2};
};

TEST_F(VisionModelTest, ReadsTheConfig) {
  const VisionConfig& c = model->config();
  EXPECT_EQ(c.hidden, 32);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_patches(), 16);
  EXPECT_EQ(c.mm_tokens_per_image, 4);
  EXPECT_EQ(c.text_hidden, 48);
  const auto exp = testing::expected();
  EXPECT_EQ(c.image_token_id, exp["special_ids"]["<image_soft_token>"].get<int>());
  EXPECT_EQ(c.boi_token_id, exp["special_ids"]["<start_of_image>"].get<int>());
  EXPECT_EQ(c.eoi_token_id, exp["special_ids"]["<end_of_image>"].get<int>());
}

TEST_F(VisionModelTest, TowerAndProjectorEqualTransformers) {
  const auto exp = testing::expected();
  const std::string dir = testing::fixture_dir();
  const std::vector<float> pixels = testing::read_f32(dir + "/pixel_values.f32");
  const std::vector<float> hidden = testing::read_f32(dir + "/vision_hidden.f32");
  const std::vector<float> feats = testing::read_f32(dir + "/image_features.f32");
  const size_t np = 3 * 56 * 56, nh = 16 * 32, nf = 4 * 48;
  for (size_t i = 0; i < exp["images"].size(); ++i) {
    std::vector<float> got_hidden;
    const std::vector<float> got = model->encode_pixels(pool, pixels.data() + i * np, &got_hidden);
    ASSERT_EQ(got.size(), nf);
    ASSERT_EQ(got_hidden.size(), nh);
    EXPECT_LT(rel_diff(got_hidden.data(), hidden.data() + i * nh, nh), 1e-5) << exp["images"][i];
    EXPECT_LT(rel_diff(got.data(), feats.data() + i * nf, nf), 1e-5) << exp["images"][i];
  }
}

TEST_F(VisionModelTest, ImageFilesToFeaturesEqualTransformers) {
  const auto exp = testing::expected();
  const std::vector<float> feats =
      testing::read_f32(testing::fixture_dir() + "/image_features.f32");
  const size_t nf = 4 * 48;
  for (size_t i = 0; i < exp["images"].size(); ++i) {
    const std::string name = exp["images"][i];
    auto img = decode_image(testing::image_bytes(name), ImageLimits{});
    ASSERT_TRUE(img.is_ok()) << name;
    auto got = model->encode_image(pool, *img);
    ASSERT_TRUE(got.is_ok()) << name << ": " << got.status().to_string();
    // rgba.png's pixels differ from Pillow 13's by one 8-bit step in places (see
    // image_preprocessor_test.cpp); the features then move a little, not by much.
    EXPECT_LT(rel_diff(got->data(), feats.data() + i * nf, nf), name == "rgba.png" ? 2e-2 : 1e-5)
        << name;
  }
}

TEST(VisionConfig, RefusalsNameTheKey) {
  auto text_only = VisionConfig::from_json(R"({"model_type": "gemma3_text"})", "config.json");
  ASSERT_FALSE(text_only.is_ok());
  EXPECT_NE(text_only.status().message().find("gemma3_text"), std::string::npos);
  auto act = VisionConfig::from_json(
      R"({"model_type": "gemma3", "vision_config": {"hidden_act": "gelu"},
          "text_config": {"hidden_size": 8}})",
      "config.json");
  ASSERT_FALSE(act.is_ok());
  EXPECT_NE(act.status().message().find("hidden_act"), std::string::npos);
  auto tokens = VisionConfig::from_json(
      R"({"model_type": "gemma3", "mm_tokens_per_image": 5,
          "vision_config": {"image_size": 56, "patch_size": 14, "hidden_size": 32,
                            "num_attention_heads": 2},
          "text_config": {"hidden_size": 8}})",
      "config.json");
  ASSERT_FALSE(tokens.is_ok());
  EXPECT_NE(tokens.status().message().find("mm_tokens_per_image"), std::string::npos);
}

}  // namespace
}  // namespace llmserve::vision
