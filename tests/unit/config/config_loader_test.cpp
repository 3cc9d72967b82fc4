#include "config/config_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "config/render_yaml.h"
#include "tests/unit/config/config_test_util.h"

namespace llmserve {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing_util::write_temp_file;

const std::string kDefaultYaml = std::string(LLMSERVE_SOURCE_DIR) + "/config/default.yaml";

Status yaml(const std::string& text, Config* out = nullptr) {
  Config c;
  Status st = apply_yaml_text(c, text, "t.yaml");
  if (out) *out = c;
  return st;
}

// config/default.yaml documents the real defaults: every key is there, with the built-in value.
TEST(DefaultYaml, ListsEveryKeyWithTheBuiltInDefault) {
  Config c;
  std::vector<std::string> seen;
  ASSERT_TRUE(apply_yaml_file(c, kDefaultYaml, &seen).is_ok())
      << apply_yaml_file(c, kDefaultYaml).message();
  std::set<std::string> expected;
  for (const ConfigKey& k : config_keys()) expected.insert(k.full_name());
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), expected);
  EXPECT_EQ(seen.size(), expected.size());
  const Config defaults;
  for (const ConfigKey& k : config_keys()) {
    EXPECT_EQ(k.get(c), k.get(defaults)) << k.full_name() << " in " << kDefaultYaml;
  }
}

TEST(DefaultYaml, EveryKeyHasAComment) {
  std::ifstream in(kDefaultYaml);
  std::string line, prev;
  int keys = 0;
  while (std::getline(in, line)) {
    if (line.rfind("  ", 0) == 0 && line[2] != '#' && line[2] != ' ') {
      ++keys;
      EXPECT_THAT(prev, StartsWith("  # ")) << "no comment above: " << line;
    }
    prev = line;
  }
  EXPECT_EQ(keys, static_cast<int>(config_keys().size()));
}

TEST(RenderYaml, RoundTripsDefaultsAndChangedValues) {
  Config changed;
  changed.server.api_keys = {"k\"1", "k\\2"};
  changed.server.served_model_name = "my: model";
  changed.engine.kv_cache_bytes = 3ull << 29;
  changed.engine.enable_prefix_caching = false;
  for (const Config& src : {Config{}, changed}) {
    Config dst;
    ASSERT_TRUE(apply_yaml_text(dst, render_config_yaml(src), "rendered").is_ok());
    for (const ConfigKey& k : config_keys()) EXPECT_EQ(k.get(dst), k.get(src)) << k.full_name();
  }
}

TEST(LoadConfig, NoFileGivesBuiltInDefaults) {
  Result<Config> c = load_config("", {}, {});
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->server.http_port, 8000);
  EXPECT_EQ(c->server.grpc_port, 50051);
  EXPECT_EQ(c->server.host, "127.0.0.1");
  EXPECT_EQ(c->server.max_body_bytes, 8u << 20);
  EXPECT_EQ(c->engine.block_size, 16);
  EXPECT_EQ(c->engine.gpu_memory_utilization, 0.9);
  EXPECT_EQ(c->server.http_threads, 256 + 16);  // derived from max_num_seqs
}

TEST(LoadConfig, PrecedenceFlagOverEnvOverFileOverDefault) {
  const std::string path = write_temp_file("p.yaml",
                                           "server:\n"
                                           "  http_port: 9000\n"
                                           "  grpc_port: 9001\n"
                                           "  host: 0.0.0.0\n"
                                           "engine:\n"
                                           "  block_size: 32\n"
                                           "  kv_cache_bytes: 2GiB\n"
                                           "  device: cpu\n");
  const std::map<std::string, std::string> env = {
      {"LLMSERVE_SERVER_HTTP_PORT", "9100"},
      {"LLMSERVE_SERVER_GRPC_PORT", "9101"},
      {"LLMSERVE_ENGINE_BLOCK_SIZE", "64"},
      {"LLMSERVE_ENGINE_MAX_NUM_SEQS", "8"},
      {"LLMSERVE_TEST_MODEL", "/ignored"},  // not a config section: ignored
      {"PATH", "/usr/bin"},
  };
  const std::vector<ConfigOverride> flags = {
      {"server.http_port", RawValue::text("9200"), "flag --http-port"},
      {"engine.device", RawValue::text("cuda"), "flag --device"},
  };
  Result<Config> c = load_config(path, env, flags);
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->server.http_port, 9200);               // flag > env > file
  EXPECT_EQ(c->server.grpc_port, 9101);               // env > file
  EXPECT_EQ(c->server.host, "0.0.0.0");               // file > default
  EXPECT_EQ(c->engine.block_size, 64);                // env > file
  EXPECT_EQ(c->engine.kv_cache_bytes, 2ull << 30);    // file
  EXPECT_EQ(c->engine.device, DeviceKind::kCuda);     // flag > file
  EXPECT_EQ(c->engine.max_num_seqs, 8);               // env > default
  EXPECT_EQ(c->engine.max_num_batched_tokens, 2048);  // default
  EXPECT_EQ(c->sources.at("server.http_port"), "flag --http-port");
  EXPECT_EQ(c->sources.at("server.grpc_port"), "env LLMSERVE_SERVER_GRPC_PORT");
  EXPECT_EQ(c->sources.at("server.host"), path + ":4");
  EXPECT_EQ(c->sources.count("engine.max_num_batched_tokens"), 0u);
  const std::string d = describe(*c);
  EXPECT_THAT(d, HasSubstr("server.http_port"));
  EXPECT_THAT(d, HasSubstr("= 9200  (flag --http-port)"));
  EXPECT_THAT(d, HasSubstr("= 2GiB  (" + path + ":7)"));
  EXPECT_THAT(d, HasSubstr("(default)"));
}

TEST(LoadConfig, ConfigFileErrorsNameThePath) {
  Result<Config> c = load_config("/nonexistent/llmserve.yaml", {}, {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr("/nonexistent/llmserve.yaml"));

  const std::string path = write_temp_file("bad.yaml",
                                           "server:\n  http_port: 8000\n\n"
                                           "engine:\n  block_size: 24\n");
  c = load_config(path, {}, {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().message(),
            path + ":5: engine.block_size: must be a power of two in [1, 256], got 24");
}

TEST(YamlLayer, UnknownKeyInEachSectionNamesKeyAndLine) {
  for (std::string_view section : config_sections()) {
    const std::string text = std::string(section) + ":\n  # a comment\n  bogus_key: 1\n";
    const Status st = yaml(text);
    ASSERT_FALSE(st.is_ok()) << section;
    EXPECT_THAT(st.message(),
                StartsWith("t.yaml:3: " + std::string(section) + ".bogus_key: unknown key"));
  }
  EXPECT_THAT(yaml("engine:\n  block_sise: 16\n").message(),
              HasSubstr("did you mean engine.block_size?"));
}

TEST(YamlLayer, UnknownSectionAndBadShapes) {
  EXPECT_THAT(yaml("server:\n  http_port: 1\nengnie:\n  x: 1\n").message(),
              StartsWith("t.yaml:3: engnie: unknown section; did you mean engine?"));
  EXPECT_THAT(yaml("- a\n- b\n").message(), StartsWith("t.yaml:1: expected a mapping of sections"));
  EXPECT_THAT(yaml("engine: 5\n").message(),
              StartsWith("t.yaml:1: engine: expected a mapping of keys, got a scalar"));
  EXPECT_THAT(yaml("engine:\n  block_size: {a: 1}\n").message(),
              StartsWith("t.yaml:2: engine.block_size: expected a value, got a mapping"));
  EXPECT_THAT(yaml("engine:\n  block_size: 16\n  block_size: 32\n").message(),
              StartsWith("t.yaml:3: engine.block_size: duplicate key"));
  EXPECT_THAT(yaml("engine: {}\nengine: {}\n").message(), HasSubstr("duplicate section"));
  EXPECT_TRUE(yaml("").is_ok());
  EXPECT_TRUE(yaml("# only comments\n").is_ok());
  EXPECT_TRUE(yaml("logging:\n  # level: debug\n").is_ok());  // null section
}

TEST(YamlLayer, WrongTypes) {
  EXPECT_EQ(yaml("server:\n  http_port: eighty\n").message(),
            "t.yaml:2: server.http_port: expected an integer, got \"eighty\"");
  EXPECT_EQ(yaml("server:\n  http_port: [1, 2]\n").message(),
            "t.yaml:2: server.http_port: expected an integer, got a list");
  EXPECT_EQ(yaml("server:\n  http_port:\n").message(),
            "t.yaml:2: server.http_port: expected an integer, got nothing (null)");
  EXPECT_EQ(yaml("engine:\n  enable_prefix_caching: maybe\n").message(),
            "t.yaml:2: engine.enable_prefix_caching: expected a boolean (true/false), got "
            "\"maybe\"");
  EXPECT_EQ(yaml("engine:\n  gpu_memory_utilization: lots\n").message(),
            "t.yaml:2: engine.gpu_memory_utilization: expected a number, got \"lots\"");
  EXPECT_EQ(yaml("server:\n  host: [a]\n").message(),
            "t.yaml:2: server.host: expected a string, got a list");
  EXPECT_EQ(yaml("server:\n  api_keys: [[a]]\n").message(),
            "t.yaml:2: server.api_keys: list items must be strings, got a list");
  EXPECT_EQ(yaml("engine:\n  max_num_seqs: 1.5\n").message(),
            "t.yaml:2: engine.max_num_seqs: expected an integer, got \"1.5\"");
}

TEST(YamlLayer, OutOfRangeBadSizeBadEnum) {
  EXPECT_EQ(yaml("\n\nengine:\n  block_size: 24\n").message(),
            "t.yaml:4: engine.block_size: must be a power of two in [1, 256], got 24");
  EXPECT_EQ(yaml("engine:\n  max_num_seqs: 0\n").message(),
            "t.yaml:2: engine.max_num_seqs: must be in [1, 65536], got 0");
  EXPECT_EQ(yaml("engine:\n  gpu_memory_utilization: 1.01\n").message(),
            "t.yaml:2: engine.gpu_memory_utilization: must be a number in (0, 1], got 1.01");
  EXPECT_EQ(yaml("server:\n  http_port: -1\n").message(),
            "t.yaml:2: server.http_port: must be in [0, 65535], got -1");
  EXPECT_THAT(yaml("engine:\n  kv_cache_bytes: 12XB\n").message(),
              StartsWith("t.yaml:2: engine.kv_cache_bytes: expected a size in bytes"));
  EXPECT_THAT(yaml("server:\n  max_body_bytes: 2GiB\n").message(),
              StartsWith("t.yaml:2: server.max_body_bytes: must be a size in [1KiB, 1GiB], got "
                         "\"2GiB\""));
  EXPECT_EQ(yaml("server:\n  max_json_depth: 8\n").message(),
            "t.yaml:2: server.max_json_depth: must be in [16, 10000], got 8");
  EXPECT_THAT(yaml("server:\n  max_json_memory: 512KiB\n").message(),
              StartsWith("t.yaml:2: server.max_json_memory: must be a size in [1MiB, 64GiB]"));
  EXPECT_EQ(yaml("engine:\n  device: gpu\n").message(),
            "t.yaml:2: engine.device: must be one of auto|cpu|cuda, got \"gpu\"");
  EXPECT_EQ(yaml("logging:\n  level: verbose\n").message(),
            "t.yaml:2: logging.level: must be one of trace|debug|info|warn|error, got "
            "\"verbose\"");
  EXPECT_EQ(yaml("model:\n  load_format: onnx\n").message(),
            "t.yaml:2: model.load_format: must be one of auto|gguf|safetensors|dummy, got "
            "\"onnx\"");
}

// model.quantize: off ("") by default; q8_0 / q4_0 / q4_k from YAML, env or flag (any case);
// anything else stops start-up naming the key and where it was set.
TEST(ModelQuantize, ChoicesAndErrorsNameTheKey) {
  EXPECT_EQ(Config().model.quantize, "");
  Config c;
  ASSERT_TRUE(yaml("model:\n  quantize: Q4_K\n", &c).is_ok());
  EXPECT_EQ(c.model.quantize, "q4_k");
  ASSERT_TRUE(yaml("model:\n  quantize: \"\"\n", &c).is_ok());
  EXPECT_EQ(c.model.quantize, "");
  EXPECT_EQ(yaml("model:\n  quantize: q3\n").message(),
            "t.yaml:2: model.quantize: must be one of \"\", \"q8_0\", \"q4_0\", \"q4_k\", "
            "\"fp8\", got \"q3\"");
  ASSERT_TRUE(yaml("model:\n  quantize: FP8\n", &c).is_ok());
  EXPECT_EQ(c.model.quantize, "fp8");
  Config e;
  ASSERT_TRUE(apply_env(e, {{"LLMSERVE_MODEL_QUANTIZE", "q8_0"}}).is_ok());
  EXPECT_EQ(e.model.quantize, "q8_0");
  EXPECT_THAT(apply_env(e, {{"LLMSERVE_MODEL_QUANTIZE", "int4"}}).message(),
              StartsWith("env LLMSERVE_MODEL_QUANTIZE: model.quantize: must be one of"));
  Config f;
  ASSERT_TRUE(
      apply_overrides(f, {{"model.quantize", RawValue::text("q4_0"), "flag --model.quantize"}})
          .is_ok());
  EXPECT_EQ(f.model.quantize, "q4_0");
  EXPECT_THAT(
      apply_overrides(f, {{"model.quantize", RawValue::text("q3"), "flag --model.quantize"}})
          .message(),
      StartsWith("flag --model.quantize: model.quantize: must be one of"));
}

TEST(YamlLayer, MalformedYamlNamesLineAndColumn) {
  const Status st = yaml("engine:\n  block_size: [1, 2\n");
  ASSERT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), StartsWith("t.yaml:"));
  EXPECT_THAT(st.message(), HasSubstr("malformed YAML"));
  const Status tab = yaml("engine:\n  block_size: 16\n bad_indent: 1\n");
  EXPECT_THAT(tab.message(), HasSubstr("t.yaml:3:"));
  EXPECT_THAT(tab.message(), HasSubstr("malformed YAML"));
  EXPECT_EQ(yaml("engine: {block_size: 16\n").message(),
            "t.yaml:2:1: malformed YAML: end of map flow not found");
  EXPECT_EQ(yaml("server:\n  host: a: b\n").message(),
            "t.yaml:2:10: malformed YAML: illegal map value");
  EXPECT_THAT(yaml("a: &x 1\nb: *y\n").message(), HasSubstr("t.yaml:2:"));
}

TEST(YamlLayer, ListsAndSizes) {
  Config c;
  ASSERT_TRUE(yaml("server:\n"
                   "  api_keys:\n"
                   "    - alpha\n"
                   "    - beta\n"
                   "  cors_allow_origins: [\"https://a.example\", \"http://b.example:3000\"]\n"
                   "  max_body_bytes: 512KiB\n"
                   "engine:\n"
                   "  kv_cache_bytes: 1500000000\n",
                   &c)
                  .is_ok());
  EXPECT_EQ(c.server.api_keys, (std::vector<std::string>{"alpha", "beta"}));
  EXPECT_EQ(c.server.cors_allow_origins,
            (std::vector<std::string>{"https://a.example", "http://b.example:3000"}));
  EXPECT_EQ(c.server.max_body_bytes, 512u << 10);
  EXPECT_EQ(c.engine.kv_cache_bytes, 1500000000u);
  ASSERT_TRUE(yaml("server:\n  api_keys: []\n  cors_allow_origins:\n", &c).is_ok());
  EXPECT_TRUE(c.server.api_keys.empty());
  EXPECT_TRUE(c.server.cors_allow_origins.empty());
  ASSERT_TRUE(yaml("server:\n  api_keys: \"a, b\"\n", &c).is_ok());
  EXPECT_EQ(c.server.api_keys, (std::vector<std::string>{"a", "b"}));
}

TEST(EnvLayer, ValuesListsSizesAndErrors) {
  Config c;
  ASSERT_TRUE(apply_env(c, {{"LLMSERVE_SERVER_API_KEYS", "k1, k2,k3"},
                            {"LLMSERVE_SERVER_CORS_ALLOW_ORIGINS", "*"},
                            {"LLMSERVE_ENGINE_KV_CACHE_BYTES", "512MiB"},
                            {"LLMSERVE_ENGINE_ENABLE_PREFIX_CACHING", "false"},
                            {"LLMSERVE_LOGGING_FORMAT", "json"},
                            {"LLMSERVE_CONFIG", "/x.yaml"}})
                  .is_ok());
  EXPECT_EQ(c.server.api_keys, (std::vector<std::string>{"k1", "k2", "k3"}));
  EXPECT_EQ(c.server.cors_allow_origins, (std::vector<std::string>{"*"}));
  EXPECT_EQ(c.engine.kv_cache_bytes, 512ull << 20);
  EXPECT_FALSE(c.engine.enable_prefix_caching);
  EXPECT_EQ(c.logging.format, LogFormat::kJson);
  EXPECT_EQ(c.sources.at("engine.kv_cache_bytes"), "env LLMSERVE_ENGINE_KV_CACHE_BYTES");

  EXPECT_EQ(apply_env(c, {{"LLMSERVE_ENGINE_BLOCK_SIZE", "24"}}).message(),
            "env LLMSERVE_ENGINE_BLOCK_SIZE: engine.block_size: must be a power of two in "
            "[1, 256], got 24");
  EXPECT_THAT(apply_env(c, {{"LLMSERVE_ENGINE_KV_CACHE_BYTES", "1 parsec"}}).message(),
              StartsWith("env LLMSERVE_ENGINE_KV_CACHE_BYTES: engine.kv_cache_bytes: expected "
                         "a size in bytes"));
  EXPECT_THAT(apply_env(c, {{"LLMSERVE_SERVER_HTTP_PROT", "1"}}).message(),
              StartsWith("env LLMSERVE_SERVER_HTTP_PROT: server.http_prot: unknown key; did you "
                         "mean server.http_port?"));
  EXPECT_EQ(apply_env(c, {{"LLMSERVE_ENGINE_DEVICE", "tpu"}}).message(),
            "env LLMSERVE_ENGINE_DEVICE: engine.device: must be one of auto|cpu|cuda, got "
            "\"tpu\"");
  EXPECT_TRUE(apply_env(c, {{"LLMSERVE_TEST_MODEL", "x"}, {"LLMSERVE_FOO", "1"}}).is_ok());
}

TEST(OverrideLayer, ErrorsNameTheFlag) {
  Config c;
  EXPECT_EQ(apply_overrides(c, {{"engine.block_size", RawValue::text("3"), "flag --block-size"}})
                .message(),
            "flag --block-size: engine.block_size: must be a power of two in [1, 256], got 3");
  EXPECT_EQ(apply_overrides(c, {{"engine.nope", RawValue::text("3"), "flag --x"}}).message(),
            "flag --x: engine.nope: unknown key");
}

// Sections whose names hold "_" are reachable from the environment (LLMSERVE_KV_TRANSFER_ROLE was
// silently ignored: the section was taken to end at the first "_").
TEST(Env, SectionsWithUnderscoresAreRead) {
  Result<Config> c = load_config("",
                                 {{"LLMSERVE_KV_TRANSFER_PORT", "6100"},
                                  {"LLMSERVE_KV_EVENTS_TOPIC", "kv@x"},
                                  {"LLMSERVE_ENGINE_MAX_NUM_SEQS", "7"}},
                                 {});
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->kv_transfer.port, 6100);
  EXPECT_EQ(c->kv_events.topic, "kv@x");
  EXPECT_EQ(c->engine.max_num_seqs, 7);
  EXPECT_EQ(c->sources.at("kv_transfer.port"), "env LLMSERVE_KV_TRANSFER_PORT");
  c = load_config("", {{"LLMSERVE_KV_TRANSFER_NOPE", "1"}}, {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("kv_transfer.nope: unknown key"), std::string::npos)
      << c.status().message();
}

// Issue 51: a KV transfer role runs only with the deployment's secret (or its file).
TEST(Finalize, KvTransferRoleNeedsTheSecret) {
  Result<Config> c = load_config("", {{"LLMSERVE_KV_TRANSFER_ROLE", "consumer"}}, {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("kv_transfer.secret (default): must be set"),
            std::string::npos)
      << c.status().message();
  c = load_config(
      "", {{"LLMSERVE_KV_TRANSFER_ROLE", "producer"}, {"LLMSERVE_KV_TRANSFER_SECRET", "short"}},
      {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("at least 16 bytes"), std::string::npos);
  const std::string path = ::testing::TempDir() + "/kv_secret";
  std::ofstream(path) << "  file-secret-0123456789  \n# second line ignored\n";
  c = load_config(
      "", {{"LLMSERVE_KV_TRANSFER_ROLE", "both"}, {"LLMSERVE_KV_TRANSFER_SECRET_FILE", path}}, {});
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->kv_transfer.secret, "file-secret-0123456789");
  EXPECT_EQ(describe(*c).find("file-secret-0123456789"), std::string::npos);  // masked
  c = load_config("",
                  {{"LLMSERVE_KV_TRANSFER_ROLE", "both"},
                   {"LLMSERVE_KV_TRANSFER_SECRET_FILE", path + ".missing"}},
                  {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("kv_transfer.secret_file"), std::string::npos);
}

TEST(Finalize, CrossKeyRulesNameBothKeysAndSources) {
  Result<Config> c = load_config("", {{"LLMSERVE_SERVER_TLS_CERT_FILE", "/etc/cert.pem"}}, {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().message(),
            "server.tls_cert_file (env LLMSERVE_SERVER_TLS_CERT_FILE) and server.tls_key_file "
            "(default): set both for TLS, or neither");

  c = load_config("", {{"LLMSERVE_ENGINE_MAX_NUM_BATCHED_TOKENS", "128"}}, {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().message(),
            "engine.max_num_batched_tokens (env LLMSERVE_ENGINE_MAX_NUM_BATCHED_TOKENS): must be "
            ">= engine.max_num_seqs (default), got 128 < 256");

  c = load_config("", {},
                  {{"engine.enable_chunked_prefill", RawValue::text("false"), "flag a"},
                   {"model.max_model_len", RawValue::text("8192"), "flag b"}});
  ASSERT_FALSE(c.is_ok());
  EXPECT_THAT(c.status().message(), HasSubstr("model.max_model_len (flag b)"));

  c = load_config("", {}, {{"server.grpc_port", RawValue::text("8000"), "flag g"}});
  ASSERT_FALSE(c.is_ok());
  EXPECT_THAT(c.status().message(), HasSubstr("must differ"));

  c = load_config("", {},
                  {{"model.load_format", RawValue::text("dummy"), "flag f"},
                   {"model.path", RawValue::text(""), "flag p"}});
  ASSERT_TRUE(c.is_ok()) << c.status().message();  // dummy needs no path
  c = load_config("", {}, {{"model.path", RawValue::text(""), "flag p"}});
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().message(), "model.path (flag p): must not be empty");

  c = load_config("", {}, {{"server.http_threads", RawValue::text("7"), "flag t"}});
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->server.http_threads, 7);
}

TEST(Finalize, ApiKeyFileIsMergedIntoApiKeys) {
  const std::string keys = write_temp_file("keys.txt", "# team keys\nsk-one\n\n  sk-two  \nsk-a\n");
  Result<Config> c = load_config(
      "", {{"LLMSERVE_SERVER_API_KEYS", "sk-a,sk-b"}, {"LLMSERVE_SERVER_API_KEY_FILE", keys}}, {});
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->server.api_keys, (std::vector<std::string>{"sk-a", "sk-b", "sk-one", "sk-two"}));
  const std::string d = describe(*c);
  EXPECT_THAT(d, HasSubstr("<4 keys hidden>"));
  EXPECT_THAT(d, ::testing::Not(HasSubstr("sk-one")));

  const std::string empty = write_temp_file("empty.txt", "# nothing\n\n");
  c = load_config("", {{"LLMSERVE_SERVER_API_KEY_FILE", empty}}, {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_THAT(c.status().message(),
              StartsWith("server.api_key_file (env LLMSERVE_SERVER_API_KEY_FILE): API key file"));
  EXPECT_THAT(c.status().message(), HasSubstr("holds no keys"));

  c = load_config("", {}, {{"server.api_key_file", RawValue::text("/nonexistent/k"), "flag k"}});
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr("/nonexistent/k"));
}

}  // namespace
}  // namespace llmserve
