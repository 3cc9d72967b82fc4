// The sentence-transformers folder reader: both Pooling config spellings, refusals that name
// what is not supported.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/pooling/pooling_config.h"

namespace llmserve {
namespace {

namespace fs = std::filesystem;

fs::path folder(const std::string& modules, const std::string& pooling) {
  fs::path d = fs::temp_directory_path() /
               ("pooling_cfg_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(d);
  fs::create_directories(d / "1_Pooling");
  std::ofstream(d / "modules.json") << modules;
  std::ofstream(d / "1_Pooling" / "config.json") << pooling;
  return d;
}

const std::string kModules =
    R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
        {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
        {"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}])";

TEST(PoolingConfig, ReadsTheBooleanSpelling) {
  const fs::path d = folder(kModules, R"({"word_embedding_dimension": 64,
      "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": false,
      "pooling_mode_lasttoken": true, "include_prompt": true})");
  auto c = load_sentence_transformers_config(d.string());
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->type, PoolingType::kLast);
  EXPECT_TRUE((*c)->normalize);
}

TEST(PoolingConfig, ReadsCls) {
  const fs::path d = folder(kModules, R"({"pooling_mode": "cls"})");
  auto c = load_sentence_transformers_config(d.string());
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ((*c)->type, PoolingType::kCls);
}

TEST(PoolingConfig, RefusesMaxPoolingByName) {
  const fs::path d = folder(kModules, R"({"pooling_mode_max_tokens": true})");
  auto c = load_sentence_transformers_config(d.string());
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("max_tokens"), std::string::npos);
}

TEST(PoolingConfig, RefusesAnUnknownModule) {
  const fs::path d = folder(
      R"([{"path":"","type":"sentence_transformers.models.Transformer"},
          {"path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
          {"path":"x","type":"sentence_transformers.models.LayerNorm"}])",
      R"({"pooling_mode": "mean"})");
  auto c = load_sentence_transformers_config(d.string());
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("LayerNorm"), std::string::npos);
}

TEST(PoolingConfig, NoModulesJsonIsNoConfig) {
  auto c = load_sentence_transformers_config(fs::temp_directory_path().string());
  ASSERT_TRUE(c.is_ok());
  EXPECT_FALSE(c->has_value());
}

}  // namespace
}  // namespace llmserve
