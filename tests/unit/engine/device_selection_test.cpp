// engine.device: auto falls back to the CPU without a usable GPU; an explicit cuda request without
// one is refused with a message naming the key; unknown names are invalid.
#include <gtest/gtest.h>

#include "engine/runner/model_runner.h"
#include "engine_test_util.h"

namespace llmserve {
namespace {

TEST(DeviceSelection, CudaWithoutADeviceIsRefusedByName) {
  LLMSERVE_REQUIRE_MODEL();
  if (cuda_backend_available()) GTEST_SKIP() << "a CUDA device is present (gpu-check covers it)";
  EngineOptions o = testing::small_options();
  o.device = "cuda";
  auto e = Engine::create(o);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(e.status().message().find("engine.device"), std::string::npos) << e.status().message();
}

TEST(DeviceSelection, AutoRunsOnTheCpuWithoutADevice) {
  LLMSERVE_REQUIRE_MODEL();
  if (cuda_backend_available()) GTEST_SKIP() << "a CUDA device is present";
  EngineOptions o = testing::small_options();
  o.device = "auto";
  auto e = Engine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
}

// Engine::create refuses o as an invalid argument whose message contains `names`.
void expect_invalid_option(const EngineOptions& o, const std::string& names) {
  auto e = Engine::create(o);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find(names), std::string::npos) << e.status().message();
}

TEST(DeviceSelection, UnknownDeviceIsInvalid) {
  EngineOptions o = testing::small_options();
  o.model_path = "unused.gguf";
  o.device = "tpu";
  expect_invalid_option(o, "tpu");
}

TEST(DeviceSelection, RunnerWithoutCudaSaysSo) {
  LLMSERVE_REQUIRE_MODEL();
  if (cuda_backend_available()) GTEST_SKIP() << "a CUDA device is present";
  ModelRunnerOptions ro;
  ro.model_path = testing::test_model();
  ro.use_cuda = true;
  auto r = ModelRunner::create(ro);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("CUDA"), std::string::npos) << r.status().message();
}

// The CUDA kernels read f16 pages only: an f32 KV cache on CUDA is refused by its key's name,
// with or without a device.
TEST(DeviceSelection, F32KvCacheOnCudaIsRefusedByName) {
  LLMSERVE_REQUIRE_MODEL();
  ModelRunnerOptions ro;
  ro.model_path = testing::test_model();
  ro.use_cuda = true;
  ro.kv_cache_dtype = kernels::KvDtype::kF32;
  auto r = ModelRunner::create(ro);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("engine.kv_cache_dtype"), std::string::npos)
      << r.status().message();
}

TEST(DeviceSelection, UnknownKvCacheDtypeIsInvalid) {
  EngineOptions o = testing::small_options();
  o.model_path = "unused.gguf";
  o.kv_cache_dtype = "bf16";
  expect_invalid_option(o, "kv_cache_dtype");
}

}  // namespace
}  // namespace llmserve
