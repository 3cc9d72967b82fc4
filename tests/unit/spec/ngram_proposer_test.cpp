#include "engine/spec/ngram_proposer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace llmserve {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(NgramDrafts, ProposesWhatFollowedTheLongestSuffixMatch) {
  // Suffix [7 8 9] occurred at 1..3, followed by 4 5; the suffix [9] alone occurs later (at 6)
  // followed by 1, but the longer match wins.
  const std::vector<int32_t> t = {0, 7, 8, 9, 4, 5, 9, 1, 2, 7, 8, 9};
  EXPECT_THAT(ngram_drafts(t, 1, 3, 2), ElementsAre(4, 5));
  EXPECT_THAT(ngram_drafts(t, 1, 3, 10), ElementsAre(4, 5, 9, 1, 2, 7, 8, 9));
  // With ngram_max 1 only the last token counts: its most recent earlier occurrence is at 6.
  EXPECT_THAT(ngram_drafts(t, 1, 1, 3), ElementsAre(1, 2, 7));
}

TEST(NgramDrafts, PrefersTheMostRecentOfEquallyLongMatches) {
  const std::vector<int32_t> t = {3, 4, 10, 3, 4, 20, 3, 4};
  EXPECT_THAT(ngram_drafts(t, 1, 4, 1), ElementsAre(20));
  EXPECT_THAT(ngram_drafts(t, 2, 2, 3), ElementsAre(20, 3, 4));
}

TEST(NgramDrafts, RespectsNgramMin) {
  // Only a 1-token match exists.
  const std::vector<int32_t> t = {5, 1, 2, 9, 5};
  EXPECT_THAT(ngram_drafts(t, 1, 3, 2), ElementsAre(1, 2));
  EXPECT_THAT(ngram_drafts(t, 2, 3, 2), IsEmpty());
}

TEST(NgramDrafts, EdgesOfTheSequence) {
  EXPECT_THAT(ngram_drafts(std::vector<int32_t>{}, 1, 4, 4), IsEmpty());
  EXPECT_THAT(ngram_drafts(std::vector<int32_t>{1}, 1, 4, 4), IsEmpty());
  EXPECT_THAT(ngram_drafts(std::vector<int32_t>{1, 2, 3, 4}, 1, 4, 4), IsEmpty());  // no repeat
  // A match at the very start (the occurrence's n-gram begins at position 0).
  EXPECT_THAT(ngram_drafts(std::vector<int32_t>{1, 2, 3, 1, 2}, 1, 4, 5), ElementsAre(3, 1, 2));
  // A run of one token: the occurrence ends just before the suffix, overlapping it.
  EXPECT_THAT(ngram_drafts(std::vector<int32_t>{6, 6, 6}, 1, 4, 4), ElementsAre(6));
  // The continuation stops at the end of the tokens.
  EXPECT_THAT(ngram_drafts(std::vector<int32_t>{8, 9, 8}, 1, 4, 4), ElementsAre(9, 8));
  EXPECT_THAT(ngram_drafts(std::vector<int32_t>{8, 9, 8}, 1, 4, 0), IsEmpty());
}

TEST(NgramProposer, ProposesPerRequest) {
  NgramProposer p(1, 3);
  const std::vector<int32_t> a = {1, 2, 3, 1, 2}, b = {4, 5, 6};
  const std::vector<DraftRequest> reqs = {{1, a, 2}, {2, b, 4}};
  std::vector<Draft> drafts;
  ASSERT_TRUE(p.propose(reqs, drafts).is_ok());
  ASSERT_EQ(drafts.size(), 2u);
  EXPECT_THAT(drafts[0].tokens, ElementsAre(3, 1));
  EXPECT_EQ(drafts[0].match_length, 2);  // "1 2" matched
  EXPECT_THAT(drafts[1].tokens, IsEmpty());
  EXPECT_EQ(drafts[1].match_length, 0);
  EXPECT_TRUE(p.proposes_before_gate());
}

TEST(NgramProposer, ReportsTheLengthOfTheSuffixMatched) {
  // 7 8 9 occurs earlier, followed by 1 2; the longest suffix is capped at ngram_max.
  const std::vector<int32_t> t = {5, 7, 8, 9, 1, 2, 6, 7, 8, 9};
  EXPECT_EQ(ngram_match(t, 1, 4, 4).match_length, 3);
  EXPECT_THAT(ngram_match(t, 1, 4, 4).tokens, ElementsAre(1, 2, 6, 7));
  EXPECT_EQ(ngram_match(t, 1, 2, 4).match_length, 2);
  EXPECT_EQ(ngram_match(t, 4, 4, 4).match_length, 0);  // no 4-token suffix repeats
  EXPECT_THAT(ngram_match(t, 4, 4, 4).tokens, IsEmpty());
}

}  // namespace
}  // namespace llmserve
