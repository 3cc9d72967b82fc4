#include "bench/serve/openai_stream.h"

#include <gtest/gtest.h>

namespace llmserve::bench {
namespace {

TEST(OpenAiStream, MeasuresTokenChunksAndReadsUsage) {
  OpenAiStreamAccumulator acc(12);
  acc.on_event(R"({"choices":[{"index":0,"text":"","finish_reason":null}],"usage":null})", 0.05);
  acc.on_event(R"({"choices":[{"index":0,"text":"Hi","finish_reason":null}],"usage":null})", 0.1);
  acc.on_event(R"({"choices":[{"index":0,"text":" there","finish_reason":null}]})", 0.25);
  acc.on_event(R"({"choices":[{"index":0,"text":"!","finish_reason":"length"}]})", 0.3);
  acc.on_event(R"({"choices":[],"usage":{"prompt_tokens":13,"completion_tokens":4}})", 0.31);
  acc.on_event("[DONE]", 0.32);
  const RequestResult r = acc.finish(0.33, "");
  EXPECT_TRUE(r.success) << r.error;
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.1);
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_NEAR(r.itl_s[0], 0.15, 1e-12);
  EXPECT_NEAR(r.itl_s[1], 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(r.latency_s, 0.33);
  EXPECT_EQ(r.prompt_tokens, 13);
  EXPECT_EQ(r.output_tokens, 4);
  EXPECT_EQ(r.generated_text, "Hi there!");
}

TEST(OpenAiStream, WithoutUsageCountsChunks) {
  OpenAiStreamAccumulator acc(5);
  acc.on_event(R"({"choices":[{"text":"a"}]})", 0.1);
  acc.on_event(R"({"choices":[{"text":"b"}]})", 0.2);
  acc.on_event("[DONE]", 0.3);
  const RequestResult r = acc.finish(0.3, "");
  EXPECT_TRUE(r.success);
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_EQ(r.prompt_tokens, 5);
}

TEST(OpenAiStream, FailuresCarryTheReason) {
  {
    OpenAiStreamAccumulator acc(1);
    acc.on_event(R"({"choices":[{"text":"a"}]})", 0.1);
    const RequestResult r = acc.finish(0.2, "");
    EXPECT_FALSE(r.success);
    EXPECT_NE(r.error.find("[DONE]"), std::string::npos);
  }
  {
    OpenAiStreamAccumulator acc(1);
    acc.on_event(R"({"error":{"message":"engine overloaded","type":"x"}})", 0.1);
    acc.on_event("[DONE]", 0.2);
    const RequestResult r = acc.finish(0.2, "");
    EXPECT_FALSE(r.success);
    EXPECT_NE(r.error.find("engine overloaded"), std::string::npos);
  }
  {
    OpenAiStreamAccumulator acc(1);
    const RequestResult r = acc.finish(0.2, "HTTP 401: {\"error\":{}}");
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.error.rfind("HTTP 401", 0), 0u);
  }
  {
    OpenAiStreamAccumulator acc(1);
    acc.on_event("{not json", 0.1);
    EXPECT_FALSE(acc.finish(0.2, "").success);
  }
}

}  // namespace
}  // namespace llmserve::bench
