#include "bench/serve/workload.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>

namespace llmserve::bench {
namespace {

TEST(Workload, FixedLengthsAreExact) {
  SyntheticWorkload w;
  w.num_requests = 20;
  w.input_len = 37;
  w.output_len = 9;
  w.seed = 3;
  auto r = make_synthetic_workload(w);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 20u);
  for (const auto& q : *r) {
    EXPECT_EQ(q.prompt_token_ids.size(), 37u);
    EXPECT_EQ(q.prompt_len, 37);
    EXPECT_EQ(q.max_tokens, 9);
    EXPECT_TRUE(q.ignore_eos);
    for (int32_t t : q.prompt_token_ids) {
      EXPECT_GE(t, w.token_id_min);
      EXPECT_LT(t, w.token_id_max);
    }
  }
  EXPECT_NE((*r)[0].prompt_token_ids, (*r)[1].prompt_token_ids);
}

TEST(Workload, RandomLengthsStayInRangeAndVary) {
  SyntheticWorkload w;
  w.num_requests = 400;
  w.input_len = 100;
  w.output_len = 20;
  w.random_range_ratio = 0.5;
  w.seed = 11;
  auto r = make_synthetic_workload(w);
  ASSERT_TRUE(r.is_ok());
  std::set<int> in_lens, out_lens;
  for (const auto& q : *r) {
    EXPECT_GE(q.prompt_len, 50);
    EXPECT_LE(q.prompt_len, 150);
    EXPECT_GE(q.max_tokens, 10);
    EXPECT_LE(q.max_tokens, 30);
    in_lens.insert(q.prompt_len);
    out_lens.insert(q.max_tokens);
  }
  EXPECT_GT(in_lens.size(), 50u);
  EXPECT_EQ(out_lens.size(), 21u);  // 400 draws over 21 values cover them all
  EXPECT_EQ(*in_lens.begin() <= 55, true);
  EXPECT_EQ(*in_lens.rbegin() >= 145, true);
}

TEST(Workload, SharedPrefixIsShared) {
  SyntheticWorkload w;
  w.num_requests = 5;
  w.input_len = 10;
  w.output_len = 4;
  w.shared_prefix_len = 64;
  auto r = make_synthetic_workload(w);
  ASSERT_TRUE(r.is_ok());
  const std::vector<int32_t> prefix((*r)[0].prompt_token_ids.begin(),
                                    (*r)[0].prompt_token_ids.begin() + 64);
  for (const auto& q : *r) {
    ASSERT_EQ(q.prompt_len, 74);
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), q.prompt_token_ids.begin()));
  }
  EXPECT_NE((*r)[0].prompt_token_ids, (*r)[1].prompt_token_ids);
}

TEST(Workload, SameSeedSameWorkload) {
  SyntheticWorkload w;
  w.num_requests = 3;
  w.input_len = 8;
  w.output_len = 8;
  w.random_range_ratio = 0.3;
  w.seed = 5;
  EXPECT_EQ(make_synthetic_workload(w)->at(2).prompt_token_ids,
            make_synthetic_workload(w)->at(2).prompt_token_ids);
}

TEST(Workload, RejectsBadParameters) {
  SyntheticWorkload w;
  w.num_requests = 1;
  w.input_len = 0;
  w.output_len = 1;
  EXPECT_FALSE(make_synthetic_workload(w).is_ok());
  w.input_len = 1;
  w.random_range_ratio = 1.0;
  EXPECT_FALSE(make_synthetic_workload(w).is_ok());
  w.random_range_ratio = 0;
  w.token_id_max = w.token_id_min;
  EXPECT_FALSE(make_synthetic_workload(w).is_ok());
}

class JsonlWorkload : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    path_ = ::testing::TempDir() + "bench_workload_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl";
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(JsonlWorkload, ReadsTextAndIdPromptsAndCycles) {
  const auto p = write(
      "{\"prompt\": \"Hello there\", \"max_tokens\": 7}\n"
      "\n"
      "{\"prompt\": [1, 2, 3], \"ignore_eos\": true}\n");
  auto r = load_jsonl_workload(p, 5, 16);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ((*r)[0].prompt_text, "Hello there");
  EXPECT_EQ((*r)[0].prompt_len, 0);
  EXPECT_EQ((*r)[0].max_tokens, 7);
  EXPECT_FALSE((*r)[0].ignore_eos);
  EXPECT_EQ((*r)[1].prompt_token_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ((*r)[1].prompt_len, 3);
  EXPECT_EQ((*r)[1].max_tokens, 16);
  EXPECT_TRUE((*r)[1].ignore_eos);
  EXPECT_EQ((*r)[4].prompt_text, "Hello there");
}

TEST_F(JsonlWorkload, ErrorsNameTheLine) {
  auto r = load_jsonl_workload(write("{\"prompt\": \"a\"}\n{\"prompt\": 5}\n"), 2, 4);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find(":2:"), std::string::npos) << r.status().message();
  EXPECT_FALSE(load_jsonl_workload(write("not json\n"), 1, 4).is_ok());
  EXPECT_FALSE(
      load_jsonl_workload(write("{\"prompt\": \"a\", \"max_tokens\": 0}\n"), 1, 4).is_ok());
  EXPECT_FALSE(load_jsonl_workload(write("\n\n"), 1, 4).is_ok());
  EXPECT_FALSE(load_jsonl_workload("/nonexistent/x.jsonl", 1, 4).is_ok());
}

}  // namespace
}  // namespace llmserve::bench
