// `llmserve generate --prompts-file`: JSONL in, one JSON result per line out, in input order.
#include "server/cli/generate_prompts_file.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tests/unit/engine/engine_test_util.h"

namespace llmserve::testing {
namespace {

using nlohmann::json;

TEST(PromptsFile, RunsEveryLineAndKeepsInputOrder) {
  LLMSERVE_REQUIRE_MODEL();
  auto engine = make_engine(small_options());
  ASSERT_NE(engine, nullptr);
  std::istringstream in(
      R"({"prompt": "The capital of France is", "max_tokens": 6, "temperature": 0})"
      "\n"
      R"({"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 4, "seed": 3, "temperature": 0.7, "top_p": 0.9})"
      "\n"
      "\n"
      R"({"prompt": "", "max_tokens": 4})"
      "\n"
      R"(not json)"
      "\n"
      R"({"prompt": "Count: one, two,", "max_tokens": 5, "temperature": 0, "stop": "three", "n": 2, "logprobs": 2})"
      "\n");
  std::ostringstream out;
  const int rc = cli::run_prompts_file(*engine, in, out);
  EXPECT_EQ(rc, 1);  // two lines fail

  std::istringstream lines(out.str());
  std::vector<json> results;
  for (std::string l; std::getline(lines, l);) results.push_back(json::parse(l));
  ASSERT_EQ(results.size(), 5u);
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i]["index"], i);

  const json& a = results[0];
  EXPECT_EQ(a["token_ids"].size(), 6u);
  EXPECT_EQ(a["finish_reason"], "length");
  EXPECT_EQ(a["usage"]["completion_tokens"], 6);
  EXPECT_GT(a["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_GE(a["e2e_ms"].get<double>(), a["ttft_ms"].get<double>());
  EXPECT_TRUE(a["text"].is_string());

  EXPECT_LE(results[1]["token_ids"].size(), 4u);
  EXPECT_GT(results[1]["usage"]["prompt_tokens"].get<int>(), 5);  // the rendered chat prompt
  EXPECT_TRUE(results[2].contains("error"));
  EXPECT_TRUE(results[3].contains("error"));

  const json& n2 = results[4];
  ASSERT_EQ(n2["samples"].size(), 2u);
  EXPECT_EQ(n2["samples"][0]["token_ids"], n2["samples"][1]["token_ids"]);  // greedy
  EXPECT_EQ(n2["logprobs"].size(), n2["token_ids"].size());
  expect_no_leak(*engine);
}

}  // namespace
}  // namespace llmserve::testing
