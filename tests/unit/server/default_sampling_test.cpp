// Issue 41 item 12: a model's own sampling defaults for requests that omit them (vLLM's
// --generation-config auto): a Hugging Face directory's generation_config.json, then
// model.default_sampling items; a request's explicit fields win.
#include "server/common/default_sampling.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/common/generation_request.h"
#include "server/http/completion_request.h"
#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve {
namespace {

namespace fs = std::filesystem;

fs::path temp_model_dir(const std::string& generation_config) {
  const fs::path dir =
      fs::temp_directory_path() / ("llmserve_default_sampling_" + std::to_string(::getpid()) + "_" +
                                   std::to_string(std::hash<std::string>{}(generation_config)));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << "{}";
  std::ofstream(dir / "generation_config.json") << generation_config;
  return dir;
}

TEST(DefaultSampling, ReadsAHuggingFaceDirectorysGenerationConfig) {
  // Llama-3-Instruct's generation_config.json, as Hugging Face ships it.
  const fs::path dir = temp_model_dir(
      R"({"bos_token_id": 128000, "do_sample": true, "eos_token_id": [128001, 128009],
          "temperature": 0.6, "top_p": 0.9, "transformers_version": "4.40.0.dev0"})");
  Config c;
  c.model.path = dir.string();
  Result<SamplingDefaults> d = default_sampling_from_config(c);
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(d->temperature, 0.6);
  EXPECT_EQ(d->top_p, 0.9);
  EXPECT_FALSE(d->top_k.has_value());
  // The config key goes over the file.
  c.model.default_sampling = {"temperature=0.2", "top_k=40"};
  d = default_sampling_from_config(c);
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(d->temperature, 0.2);
  EXPECT_EQ(d->top_p, 0.9);
  EXPECT_EQ(d->top_k, 40);
  EXPECT_EQ(d->describe(), "temperature=0.2 top_p=0.9 top_k=40");
  fs::remove_all(dir);
}

TEST(DefaultSampling, DoSampleFalseMeansGreedy) {
  Result<SamplingDefaults> d = parse_generation_config(R"({"do_sample": false, "top_k": 50})");
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(d->temperature, 0.0);
  EXPECT_EQ(d->top_k, 50);
  d = parse_generation_config(R"({"bos_token_id": 1, "eos_token_id": 2})");
  ASSERT_TRUE(d.is_ok());
  EXPECT_TRUE(d->empty());
  EXPECT_EQ(d->describe(), "none");
}

TEST(DefaultSampling, BadItemsNameTheKey) {
  SamplingDefaults d;
  for (const char* bad :
       {"temperature", "temperature=hot", "top_p=0", "temperature=-1", "top_k=1.5", "seed=3"}) {
    Status st = apply_sampling_item(bad, &d);
    EXPECT_FALSE(st.is_ok()) << bad;
    EXPECT_NE(st.message().find("model.default_sampling"), std::string::npos) << st.message();
  }
  EXPECT_FALSE(parse_generation_config(R"({"temperature": "warm"})").is_ok());
}

TEST(DefaultSampling, RequestsStartFromTheDefaultsAndTheirOwnFieldsWin) {
  testing::FakeTokenizer tok;
  RequestLimits limits;
  limits.vocab_size = testing::FakeTokenizer::kVocab;
  limits.max_model_len = 64;
  limits.default_sampling.temperature = 0.0;
  limits.default_sampling.top_p = 0.9;
  auto omitted = parse_completion_request(R"({"prompt": "hi"})", tok, limits);
  ASSERT_TRUE(omitted.is_ok()) << omitted.status().message();
  EXPECT_EQ(omitted->params.temperature, 0.0f);
  EXPECT_EQ(omitted->params.top_p, 0.9f);
  auto explicit_t =
      parse_completion_request(R"({"prompt": "hi", "temperature": 1.0})", tok, limits);
  ASSERT_TRUE(explicit_t.is_ok()) << explicit_t.status().message();
  EXPECT_EQ(explicit_t->params.temperature, 1.0f);
  EXPECT_EQ(explicit_t->params.top_p, 0.9f);
}

}  // namespace
}  // namespace llmserve
