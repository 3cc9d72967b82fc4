// Release binaries carry no fault switch: the engine library's weak default ignores
// LLMSERVE_FAULT_WEDGE_ENGINE (unit_engine_fault links the switches and wedges).
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/unit/engine/engine_test_util.h"

namespace llmserve::testing {
namespace {

TEST(EngineFaultSwitches, OffOutsideTheFaultBinaries) {
  LLMSERVE_REQUIRE_MODEL();
  ::setenv("LLMSERVE_FAULT_WEDGE_ENGINE", "1", 1);
  auto engine = make_engine(small_options());
  ::unsetenv("LLMSERVE_FAULT_WEDGE_ENGINE");
  ASSERT_NE(engine, nullptr);
  GenerateRequest r = make_request(engine->tokenizer().encode("Hello", true, false), 6);
  r.params.ignore_eos = true;
  auto stream = engine->submit(r);
  ASSERT_TRUE(stream.is_ok());
  const auto out = collect(**stream);
  EXPECT_EQ(out.samples[0].finish, FinishReason::kLength);
  EXPECT_EQ(out.samples[0].token_ids.size(), 6u);
}

}  // namespace
}  // namespace llmserve::testing
