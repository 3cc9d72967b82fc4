// Prompts with images in the scheduler (Request::image_spans / image_hashes): a prefill chunk
// never splits an image (an image's rows attend each other, so they run in one step), a chunk
// starting at an image runs all of it or waits for a step with room, an image larger than the
// step budget is refused, and each image's content hash keys the prefix-cache blocks holding its
// rows: the same image shares them, another image with the same tokens does not, and the text
// before the image is shared either way.
#include <gtest/gtest.h>

#include "engine/core/image_spans.h"
#include "engine/scheduler/scheduler.h"
#include "tests/unit/scheduler/scheduler_harness.h"

namespace llmserve {
namespace {

using testing::Harness;
using testing::make_request;
using testing::tokens;

constexpr int32_t kImageToken = 5000;

SchedulerConfig image_config(int32_t budget) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 8;
  c.max_model_len = 1024;
  return c;
}

// `before` text tokens, an image of `len` soft tokens, `after` text tokens.
Request image_request(uint64_t id, int32_t before, int32_t len, int32_t after, uint64_t hash,
                      int32_t max_tokens = 2) {
  std::vector<int32_t> p = tokens(before, 1);
  for (int32_t i = 0; i < len; ++i) p.push_back(kImageToken);
  for (int32_t t : tokens(after, 2)) p.push_back(t);
  Request r = make_request(id, std::move(p), max_tokens);
  r.image_spans = {{before, len}};
  r.image_hashes = {hash};
  return r;
}

// Every chunk of request `id` in the steps run: [start, end).
std::vector<std::pair<int32_t, int32_t>> run_chunks(Harness& h, uint64_t id) {
  std::vector<std::pair<int32_t, int32_t>> chunks;
  while (h.sched->has_unfinished_requests()) {
    const auto& out = h.step();
    const auto prompt = static_cast<int32_t>(h.tracked[id].prompt.size());
    for (const ScheduledRequest& s : out.scheduled) {
      if (s.request_id == id && s.num_computed_tokens < prompt) {
        chunks.emplace_back(s.num_computed_tokens, s.num_computed_tokens + s.num_new_tokens);
      }
    }
    if (::testing::Test::HasFailure()) break;
  }
  h.sched->schedule();
  return chunks;
}

TEST(SchedulerImages, ChunksEndBeforeAnImageTheyWouldSplit) {
  Harness h(image_config(16), 200);
  h.add(image_request(1, 10, 12, 20, 0xabc));  // image rows [10, 22)
  const auto chunks = run_chunks(h, 1);
  // 16 would end inside the image: the first chunk stops at its start, the second runs the
  // whole image (12 <= 16) and the text after it up to the budget, and so on.
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks[0], std::make_pair(0, 10));
  EXPECT_EQ(chunks[1], std::make_pair(10, 26));
  const std::vector<ImageSpan> spans = {{10, 12}};
  for (const auto& [a, b] : chunks) EXPECT_FALSE(splits_image(spans, a, b)) << a << ".." << b;
  EXPECT_EQ(h.tracked[1].reason, FinishReason::kLength);
  h.expect_all_blocks_free();
}

TEST(SchedulerImages, AnImageWaitsForAStepWithRoomForAllOfIt) {
  Harness h(image_config(20), 200);
  h.add(make_request(1, tokens(12, 3), 8));      // takes 12 of the first step's 20
  h.add(image_request(2, 0, 16, 4, 0x1234, 2));  // its image (16) does not fit the 8 left
  const auto& s1 = h.step();
  ASSERT_EQ(s1.scheduled.size(), 1u);
  EXPECT_EQ(s1.scheduled[0].request_id, 1u);
  // Next step: request 1 decodes (1 token), 19 left: the image runs whole.
  const auto& s2 = h.step();
  bool ran = false;
  for (const auto& s : s2.scheduled) {
    if (s.request_id == 2) {
      ran = true;
      EXPECT_EQ(s.num_computed_tokens, 0);
      EXPECT_EQ(s.num_new_tokens, 19);  // the image and 3 of the text after it
    }
  }
  EXPECT_TRUE(ran);
  h.run_to_completion();
  h.expect_all_blocks_free();
}

TEST(SchedulerImages, RefusesAnImageLargerThanAStepAndBadSpans) {
  Harness h(image_config(16), 200);
  EXPECT_FALSE(h.sched->add_request(image_request(1, 2, 17, 2, 1)).is_ok());
  Request r = image_request(2, 2, 4, 2, 1);
  r.image_hashes.clear();  // spans without hashes
  EXPECT_FALSE(h.sched->add_request(std::move(r)).is_ok());
  Request past = image_request(3, 2, 4, 0, 1);  // the image is the prompt's last row
  EXPECT_FALSE(h.sched->add_request(std::move(past)).is_ok());
  Request scored = image_request(4, 2, 4, 2, 1);
  scored.score_prompt = true;
  EXPECT_FALSE(h.sched->add_request(std::move(scored)).is_ok());
}

// Blocks of 8: text rows [0, 12), the image [12, 28), text after. Block 0 holds text only; blocks
// 1-3 hold image rows.
TEST(SchedulerImages, TheImageHashKeysEveryBlockHoldingItsRows) {
  Harness h(image_config(256), 200, /*block_size=*/8);
  h.add(image_request(1, 12, 16, 20, 0x1111, 1));
  h.run_to_completion();
  // The same image: every full block of the prompt but the last row's is a hit.
  h.add(image_request(2, 12, 16, 20, 0x1111, 1));
  h.run_to_completion();
  EXPECT_EQ(h.tracked[2].cached_tokens, 40);
  // Another image, same tokens: only block 0 (text before the image) is shared.
  h.add(image_request(3, 12, 16, 20, 0x2222, 1));
  h.run_to_completion();
  EXPECT_EQ(h.tracked[3].cached_tokens, 8);
  // And the token ids alone (no image hash) share no image block either.
  std::vector<int32_t> plain = h.tracked[1].prompt;
  h.add(make_request(4, plain, 1));
  h.run_to_completion();
  EXPECT_EQ(h.tracked[4].cached_tokens, 8);
  h.expect_all_blocks_free();
}

TEST(SchedulerImages, ACachedPrefixEndingInsideAnImageRunsTheRestOfIt) {
  // Blocks of 8, image rows [4, 20). The first request (21 prompt rows) leaves 2 full blocks
  // cached; the second (same head, longer tail) hits them: 16 rows, ending inside the image.
  // Its first chunk starts there and runs past the image's end.
  Harness h(image_config(64), 200, /*block_size=*/8);
  h.add(image_request(1, 4, 16, 1, 0x77, 1));
  h.run_to_completion();
  h.add(image_request(2, 4, 16, 30, 0x77, 1));
  const auto& out = h.step();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].num_computed_tokens, 16);
  EXPECT_GE(out.scheduled[0].num_computed_tokens + out.scheduled[0].num_new_tokens, 20);
  h.run_to_completion();
  h.expect_all_blocks_free();
}

}  // namespace
}  // namespace llmserve
