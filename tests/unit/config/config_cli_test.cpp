#include "config/config_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/config/config_test_util.h"

namespace llmserve {
namespace {

using ::testing::HasSubstr;
using testing_util::write_temp_file;

// A "serve"-like command with the config options, parsed from `args`.
struct Cli {
  CLI::App app{"test"};
  ConfigFlags flags;
  Cli() { add_config_options(app, flags); }
  void parse(std::vector<std::string> args) {
    args.insert(args.begin(), "llmserve");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    app.parse(static_cast<int>(argv.size()), argv.data());
  }
};

TEST(ConfigCli, FlagsOfEveryKind) {
  Cli cli;
  cli.parse({"--http-port",
             "9000",
             "--engine.block-size=32",
             "--api-key",
             "a",
             "--api-key",
             "b,c",
             "--no-enable-prefix-caching",
             "--engine.cuda-graphs=false",
             "--kv-cache-bytes",
             "2GiB",
             "--model",
             "m.gguf",
             "--device",
             "cpu",
             "--gpu-memory-utilization",
             "0.5",
             "--logging.level",
             "debug",
             "--threads",
             "3",
             "--max-num-seqs",
             "4",
             "--max-num-batched-tokens",
             "64",
             "--grpc-port",
             "9001",
             "--host",
             "::1",
             "--server.cors-allow-origins",
             "https://x.example"});
  Result<Config> c = load_config(cli.flags, {});
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->server.http_port, 9000);
  EXPECT_EQ(c->server.grpc_port, 9001);
  EXPECT_EQ(c->server.host, "::1");
  EXPECT_EQ(c->engine.block_size, 32);
  EXPECT_EQ(c->server.api_keys, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(c->server.cors_allow_origins, (std::vector<std::string>{"https://x.example"}));
  EXPECT_FALSE(c->engine.enable_prefix_caching);
  EXPECT_FALSE(c->engine.cuda_graphs);
  EXPECT_EQ(c->engine.kv_cache_bytes, 2ull << 30);
  EXPECT_EQ(c->model.path, "m.gguf");
  EXPECT_EQ(c->engine.device, DeviceKind::kCpu);
  EXPECT_EQ(c->engine.gpu_memory_utilization, 0.5);
  EXPECT_EQ(c->logging.level, LogLevel::kDebug);
  EXPECT_EQ(c->engine.threads, 3);
  EXPECT_EQ(c->engine.max_num_seqs, 4);
  EXPECT_EQ(c->engine.max_num_batched_tokens, 64);
  EXPECT_EQ(c->sources.at("engine.block_size"), "flag --engine.block-size");
}

TEST(ConfigCli, BoolFlagForms) {
  Cli a;
  a.parse({"--engine.enable-chunked-prefill"});
  Cli b;
  b.parse({"--no-engine.enable-chunked-prefill"});
  Cli d;
  d.parse({"--enable-chunked-prefill=off"});
  EXPECT_TRUE(load_config(a.flags, {})->engine.enable_chunked_prefill);
  EXPECT_FALSE(load_config(b.flags, {})->engine.enable_chunked_prefill);
  EXPECT_FALSE(load_config(d.flags, {})->engine.enable_chunked_prefill);
}

TEST(ConfigCli, LastScalarFlagWins) {
  Cli cli;
  cli.parse({"--block-size", "8", "--engine.block-size", "64"});
  EXPECT_EQ(load_config(cli.flags, {})->engine.block_size, 64);
}

TEST(ConfigCli, PrecedenceFlagOverEnvOverFileOverDefault) {
  const std::string path = write_temp_file("c.yaml",
                                           "server:\n  http_port: 1111\n  grpc_port: 2222\n"
                                           "  max_waiting_requests: 7\n"
                                           "engine:\n  max_logprobs: 5\n");
  const std::map<std::string, std::string> env = {{"LLMSERVE_SERVER_HTTP_PORT", "3333"},
                                                  {"LLMSERVE_SERVER_GRPC_PORT", "4444"},
                                                  {"LLMSERVE_ENGINE_SEED", "99"}};
  Cli cli;
  cli.parse({"--config", path, "--http-port", "5555"});
  Result<Config> c = load_config(cli.flags, env);
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->server.http_port, 5555);          // flag
  EXPECT_EQ(c->server.grpc_port, 4444);          // env over file
  EXPECT_EQ(c->server.max_waiting_requests, 7);  // file
  EXPECT_EQ(c->engine.max_logprobs, 5);          // file
  EXPECT_EQ(c->engine.seed, 99u);                // env over default
  EXPECT_EQ(c->engine.block_size, 16);           // default
}

TEST(ConfigCli, ConfigFileFromEnvWhenNoFlag) {
  const std::string a = write_temp_file("a.yaml", "engine:\n  max_logprobs: 3\n");
  const std::string b = write_temp_file("b.yaml", "engine:\n  max_logprobs: 4\n");
  Cli by_env;
  by_env.parse({});
  EXPECT_EQ(load_config(by_env.flags, {{"LLMSERVE_CONFIG", a}})->engine.max_logprobs, 3);
  Cli by_flag;
  by_flag.parse({"--config", b});
  EXPECT_EQ(load_config(by_flag.flags, {{"LLMSERVE_CONFIG", a}})->engine.max_logprobs, 4);
}

TEST(ConfigCli, BadFlagValueNamesTheFlag) {
  Cli cli;
  cli.parse({"--block-size", "24"});
  Result<Config> c = load_config(cli.flags, {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().message(),
            "flag --engine.block-size: engine.block_size: must be a power of two in [1, 256], "
            "got 24");
  Cli size;
  size.parse({"--kv-cache-bytes", "12XB"});
  EXPECT_THAT(load_config(size.flags, {}).status().message(),
              HasSubstr("flag --engine.kv-cache-bytes: engine.kv_cache_bytes: expected a size"));
}

TEST(ConfigCli, UnknownFlagIsAParseError) {
  Cli cli;
  EXPECT_THROW(cli.parse({"--engine.bogus", "1"}), CLI::ParseError);
}

TEST(ConfigCli, HelpListsEveryKeyWithEnvAndDefault) {
  Cli cli;
  const std::string help = cli.app.help();
  for (const ConfigKey& k : config_keys()) {
    EXPECT_THAT(help, HasSubstr(k.flag_name())) << k.full_name();
    EXPECT_THAT(help, HasSubstr(k.env_name())) << k.full_name();
  }
  for (const char* alias : {"--model", "--config", "--http-port", "--grpc-port", "--host",
                            "--device", "--threads", "--kv-cache-bytes", "--max-num-seqs",
                            "--max-num-batched-tokens", "--block-size", "--api-key"}) {
    EXPECT_THAT(help, HasSubstr(alias));
  }
  EXPECT_THAT(help, HasSubstr("Default: 8000"));
  EXPECT_THAT(help, HasSubstr("Default: 1GiB"));
}

}  // namespace
}  // namespace llmserve
