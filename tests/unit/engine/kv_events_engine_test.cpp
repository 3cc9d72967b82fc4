// KV events through the whole engine on the real model: a request's prompt blocks arrive on the
// bus as one BlockStored chain with the prompt's tokens, a reset of the idle engine is one
// AllBlocksCleared, and with events off there is no bus.
#include <gtest/gtest.h>

#include <chrono>

#include "engine/kv_events/kv_event_bus.h"
#include "tests/unit/engine/engine_test_util.h"

namespace llmserve::testing {
namespace {

std::vector<KvEvent> drain(KvEventSubscription& sub) {
  std::vector<KvEvent> events;
  while (true) {
    KvEventRead r = sub.next(64, std::chrono::milliseconds(200));
    if (r.batches.empty()) return events;
    for (const auto& b : r.batches) events.insert(events.end(), b->events.begin(), b->events.end());
  }
}

TEST(KvEventsEngine, PromptBlocksAreStoredAndAResetClearsThem) {
  LLMSERVE_REQUIRE_MODEL();
  EngineOptions o = small_options();
  o.kv_events_buffer_steps = 64;
  auto engine = make_engine(o);
  ASSERT_NE(engine, nullptr);
  KvEventBus* bus = engine->kv_event_bus();
  ASSERT_NE(bus, nullptr);
  auto sub = bus->subscribe(0);
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 70; ++i) prompt.push_back(100 + i);  // 4 full blocks of 16
  run_alone(*engine, make_request(prompt, 1));
  std::vector<int32_t> stored_tokens;
  std::optional<uint64_t> first_parent = 1;
  for (const KvEvent& e : drain(*sub)) {
    const auto* s = std::get_if<KvBlockStored>(&e);
    ASSERT_NE(s, nullptr) << "only stores expected";
    if (stored_tokens.empty()) first_parent = s->parent_block_hash;
    EXPECT_EQ(s->block_size, 16);
    stored_tokens.insert(stored_tokens.end(), s->token_ids.begin(), s->token_ids.end());
  }
  EXPECT_FALSE(first_parent.has_value());  // the chain starts at the prompt's first block
  ASSERT_GE(stored_tokens.size(), 64u);
  EXPECT_EQ(std::vector<int32_t>(stored_tokens.begin(), stored_tokens.begin() + 64),
            std::vector<int32_t>(prompt.begin(), prompt.begin() + 64));

  auto cleared = engine->reset_prefix_cache();
  ASSERT_TRUE(cleared.is_ok()) << cleared.status().to_string();
  EXPECT_TRUE(*cleared);
  const std::vector<KvEvent> after = drain(*sub);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<KvAllBlocksCleared>(after[0]));
  EXPECT_EQ(engine->stats().kv_event_batches, bus->next_sequence_number());
  engine->shutdown();
  EXPECT_TRUE(sub->next(1, std::chrono::milliseconds(1000)).closed);
}

TEST(KvEventsEngine, OffByDefault) {
  LLMSERVE_REQUIRE_MODEL();
  auto engine = make_engine(small_options());
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->kv_event_bus(), nullptr);
  auto cleared = engine->reset_prefix_cache();
  ASSERT_TRUE(cleared.is_ok());
  EXPECT_TRUE(*cleared);
}

}  // namespace
}  // namespace llmserve::testing
