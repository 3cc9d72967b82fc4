#include "config/config_keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace llmserve {
namespace {

TEST(ConfigKeys, NamesAreUniqueAndWellFormed) {
  std::set<std::string> full, env, flags;
  for (const ConfigKey& k : config_keys()) {
    EXPECT_TRUE(full.insert(k.full_name()).second) << k.full_name();
    EXPECT_TRUE(env.insert(k.env_name()).second) << k.env_name();
    EXPECT_TRUE(flags.insert(k.flag_name()).second) << k.flag_name();
    for (std::string_view a : k.aliases) {
      EXPECT_TRUE(flags.insert("--" + std::string(a)).second) << a;
    }
    EXPECT_FALSE(k.help.empty()) << k.full_name();
    EXPECT_NE(std::find(config_sections().begin(), config_sections().end(), k.section),
              config_sections().end());
  }
  const ConfigKey* k = find_config_key("engine", "kv_cache_bytes");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->full_name(), "engine.kv_cache_bytes");
  EXPECT_EQ(k->env_name(), "LLMSERVE_ENGINE_KV_CACHE_BYTES");
  EXPECT_EQ(k->flag_name(), "--engine.kv-cache-bytes");
  EXPECT_EQ(find_config_key("engine", "nope"), nullptr);
}

TEST(ConfigKeys, EverySectionHasKeysAndIssueKeysExist) {
  for (std::string_view s : config_sections()) {
    EXPECT_TRUE(std::any_of(config_keys().begin(), config_keys().end(), [&](const ConfigKey& k) {
      return k.section == s;
    })) << s;
  }
  for (const char* name : {"server.host",
                           "server.http_port",
                           "server.grpc_port",
                           "server.http_threads",
                           "server.api_keys",
                           "server.api_key_file",
                           "server.tls_cert_file",
                           "server.tls_key_file",
                           "server.cors_allow_origins",
                           "server.max_body_bytes",
                           "server.max_waiting_requests",
                           "server.max_waiting_tokens",
                           "server.shutdown_grace_seconds",
                           "server.metrics_require_auth",
                           "server.request_timeout_seconds",
                           "server.watchdog_seconds",
                           "server.stream_buffer_tokens",
                           "server.served_model_name",
                           "model.path",
                           "model.load_format",
                           "model.dummy_preset",
                           "model.chat_template",
                           "model.max_model_len",
                           "engine.device",
                           "engine.threads",
                           "engine.kv_cache_bytes",
                           "engine.gpu_memory_utilization",
                           "engine.block_size",
                           "engine.max_num_seqs",
                           "engine.max_num_batched_tokens",
                           "engine.enable_prefix_caching",
                           "engine.enable_chunked_prefill",
                           "engine.seed",
                           "engine.max_logprobs",
                           "engine.cuda_graphs",
                           "logging.level",
                           "logging.format"}) {
    const std::string n(name);
    const size_t dot = n.find('.');
    EXPECT_NE(find_config_key(n.substr(0, dot), n.substr(dot + 1)), nullptr) << name;
  }
}

// get() text fed back to set() keeps the value, for defaults and for a changed config.
TEST(ConfigKeys, GetSetRoundTrip) {
  Config changed;
  changed.server.api_keys = {"k1", "k2"};
  changed.server.max_body_bytes = 123456789;
  changed.engine.gpu_memory_utilization = 0.123456789;
  changed.engine.seed = 9223372036854775807ull;
  changed.engine.device = DeviceKind::kCuda;
  changed.logging.format = LogFormat::kJson;
  for (const Config& src : {Config{}, changed}) {
    for (const ConfigKey& k : config_keys()) {
      Config dst;
      const std::string text = k.get(src);
      ASSERT_TRUE(k.set(dst, RawValue::text(text)).is_ok()) << k.full_name() << " = " << text;
      EXPECT_EQ(k.get(dst), text) << k.full_name();
    }
  }
  EXPECT_EQ(changed.engine.gpu_memory_utilization, 0.123456789);
}

TEST(ConfigKeys, RangeMessages) {
  Config c;
  const ConfigKey* bs = find_config_key("engine", "block_size");
  EXPECT_EQ(bs->set(c, RawValue::text("24")).message(),
            "must be a power of two in [1, 256], got 24");
  EXPECT_EQ(bs->set(c, RawValue::text("512")).message(),
            "must be a power of two in [1, 256], got 512");
  EXPECT_TRUE(bs->set(c, RawValue::text("256")).is_ok());
  EXPECT_EQ(c.engine.block_size, 256);
  const ConfigKey* port = find_config_key("server", "http_port");
  EXPECT_EQ(port->set(c, RawValue::text("70000")).message(), "must be in [0, 65535], got 70000");
  EXPECT_EQ(port->set(c, RawValue::list({"1"})).message(), "expected an integer, got a list");
  EXPECT_EQ(port->set(c, RawValue::null()).message(), "expected an integer, got nothing (null)");
  const ConfigKey* util = find_config_key("engine", "gpu_memory_utilization");
  EXPECT_EQ(util->set(c, RawValue::text("0")).message(), "must be a number in (0, 1], got 0");
  EXPECT_EQ(util->set(c, RawValue::text("1.5")).message(), "must be a number in (0, 1], got 1.5");
  EXPECT_TRUE(util->set(c, RawValue::text("1")).is_ok());
  const ConfigKey* dev = find_config_key("engine", "device");
  EXPECT_EQ(dev->set(c, RawValue::text("gpu")).message(),
            "must be one of auto|cpu|cuda, got \"gpu\"");
  EXPECT_TRUE(dev->set(c, RawValue::text("CUDA")).is_ok());
  EXPECT_EQ(c.engine.device, DeviceKind::kCuda);
  const ConfigKey* kv = find_config_key("engine", "kv_cache_bytes");
  EXPECT_FALSE(kv->set(c, RawValue::text("512KiB")).is_ok());  // below 1MiB
  EXPECT_TRUE(kv->set(c, RawValue::text("512MiB")).is_ok());
  EXPECT_EQ(c.engine.kv_cache_bytes, 512ull << 20);
  const ConfigKey* host = find_config_key("server", "host");
  EXPECT_EQ(host->set(c, RawValue::text("  ")).message(), "must not be empty");
}

}  // namespace
}  // namespace llmserve
