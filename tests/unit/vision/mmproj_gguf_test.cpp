// llama.cpp's mmproj GGUF of the tiny Gemma 3 (written by its converter,
// tests/reference/make_gemma3_mmproj.py): the same config and processor as the HF folder, and the
// tower and projector outputs of transformers for the fixture's pixels and image files.
#include "engine/vision/mmproj_gguf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/vision/vision_model.h"
#include "tests/unit/vision/vision_fixture.h"

namespace llmserve::vision {
namespace {

using testing::rel_diff;

// The converter writes mm.input_projection in f16 even with --outtype f32 (tensor_force_quant),
// so the projected features carry its rounding (2^-11 relative per weight; 4e-4 seen); the tower
// is f32 and stays within 1e-5.
constexpr double kProjectorTolerance = 2e-3;

std::string mmproj_path() {
  return testing::fixture_dir() + "/mmproj-f32.gguf";
}

MmprojTokenIds fixture_ids() {
  const auto exp = testing::expected();
  return {exp["special_ids"]["<image_soft_token>"].get<int32_t>(),
          exp["special_ids"]["<start_of_image>"].get<int32_t>(),
          exp["special_ids"]["<end_of_image>"].get<int32_t>()};
}

TEST(MmprojGguf, ConfigAndProcessorEqualTheHfFolders) {
  auto m = read_mmproj(mmproj_path(), fixture_ids());
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  auto hf = VisionModel::load(testing::fixture_dir());
  ASSERT_TRUE(hf.is_ok()) << hf.status().to_string();
  const VisionConfig& a = m->config;
  const VisionConfig& b = (*hf)->config();
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.intermediate, b.intermediate);
  EXPECT_EQ(a.num_layers, b.num_layers);
  EXPECT_EQ(a.num_heads, b.num_heads);
  EXPECT_EQ(a.image_size, b.image_size);
  EXPECT_EQ(a.patch_size, b.patch_size);
  EXPECT_FLOAT_EQ(a.layer_norm_eps, b.layer_norm_eps);
  EXPECT_EQ(a.mm_tokens_per_image, b.mm_tokens_per_image);
  EXPECT_EQ(a.text_hidden, b.text_hidden);
  EXPECT_EQ(a.image_token_id, b.image_token_id);
  const ImagePreprocessor& p = m->preprocessor;
  const ImagePreprocessor& q = (*hf)->preprocessor();
  EXPECT_EQ(p.width, q.width);
  EXPECT_EQ(p.height, q.height);
  EXPECT_EQ(p.resample, q.resample);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(p.mean[c], q.mean[c], 1e-7);
    EXPECT_NEAR(p.std[c], q.std[c], 1e-7);
  }
}

TEST(MmprojGguf, TowerAndProjectorEqualTransformers) {
  auto model = VisionModel::load_mmproj(mmproj_path(), fixture_ids());
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  kernels::ThreadPool pool{2};
  const auto exp = testing::expected();
  const std::string dir = testing::fixture_dir();
  const std::vector<float> pixels = testing::read_f32(dir + "/pixel_values.f32");
  const std::vector<float> hidden = testing::read_f32(dir + "/vision_hidden.f32");
  const std::vector<float> feats = testing::read_f32(dir + "/image_features.f32");
  const size_t np = 3 * 56 * 56, nh = 16 * 32, nf = 4 * 48;
  for (size_t i = 0; i < exp["images"].size(); ++i) {
    std::vector<float> got_hidden;
    const std::vector<float> got =
        (*model)->encode_pixels(pool, pixels.data() + i * np, &got_hidden);
    ASSERT_EQ(got.size(), nf);
    EXPECT_LT(rel_diff(got_hidden.data(), hidden.data() + i * nh, nh), 1e-5) << exp["images"][i];
    EXPECT_LT(rel_diff(got.data(), feats.data() + i * nf, nf), kProjectorTolerance)
        << exp["images"][i];
  }
}

TEST(MmprojGguf, ImageFilesGiveTheHfFoldersFeatures) {
  auto gguf = VisionModel::load_mmproj(mmproj_path(), fixture_ids());
  auto hf = VisionModel::load(testing::fixture_dir());
  ASSERT_TRUE(gguf.is_ok() && hf.is_ok());
  kernels::ThreadPool pool{2};
  const auto exp = testing::expected();
  for (size_t i = 0; i < exp["images"].size(); ++i) {
    const std::string name = exp["images"][i];
    auto img = decode_image(testing::image_bytes(name), ImageLimits{});
    ASSERT_TRUE(img.is_ok()) << name;
    auto a = (*gguf)->encode_image(pool, *img);
    auto b = (*hf)->encode_image(pool, *img);
    ASSERT_TRUE(a.is_ok() && b.is_ok()) << name;
    EXPECT_LT(rel_diff(a->data(), b->data(), b->size()), kProjectorTolerance) << name;
  }
}

TEST(MmprojGguf, RefusalsNameTheProblem) {
  auto missing = read_mmproj(testing::fixture_dir() + "/no-such.gguf", {});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("no-such.gguf"), std::string::npos);
  // A text model's GGUF is not an mmproj file.
  auto text = read_mmproj(std::string(LLMSERVE_FIXTURES_DIR) + "/tiny_qwen3_embed/model.gguf", {});
  ASSERT_FALSE(text.is_ok());
  EXPECT_NE(text.status().message().find("general.architecture"), std::string::npos);
}

}  // namespace
}  // namespace llmserve::vision
