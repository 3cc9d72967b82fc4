// Loads a Config from its four layers, highest precedence last applied:
//   built-in defaults < YAML file < LLMSERVE_<SECTION>_<KEY> environment < command-line flags.
// Every error names the key and its source, e.g.
//   "config/default.yaml:12: engine.block_size: must be a power of two in [1, 256], got 24".
// The serve command should call load_config(const ConfigFlags&, env) from config_cli.h.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/config_keys.h"
#include "engine/core/status.h"

namespace llmserve {

// One value set from the command line.
struct ConfigOverride {
  std::string key;  // "engine.block_size"
  RawValue value;
  std::string source;  // "flag --block-size"
};

// Environment variable naming the config file when no --config flag is given.
inline constexpr std::string_view kConfigFileEnv = "LLMSERVE_CONFIG";

// The process environment as a map (NAME -> value).
std::map<std::string, std::string> current_environment();

// Layers; each leaves `config` partly updated on error. `keys_seen`, when given, receives the
// "section.key" names the YAML sets. `source_name` prefixes messages ("file.yaml").
Status apply_yaml_text(Config& config, std::string_view yaml, const std::string& source_name,
                       std::vector<std::string>* keys_seen = nullptr);
Status apply_yaml_file(Config& config, const std::string& path,
                       std::vector<std::string>* keys_seen = nullptr);
// Reads LLMSERVE_<SECTION>_<KEY> for the four sections; an unknown key under a known section
// prefix is an error, other LLMSERVE_* names (LLMSERVE_CONFIG, LLMSERVE_TEST_MODEL) are ignored.
Status apply_env(Config& config, const std::map<std::string, std::string>& env);
Status apply_overrides(Config& config, const std::vector<ConfigOverride>& overrides);

// Cross-key rules (TLS cert and key together, max_num_batched_tokens >= max_num_seqs, ...),
// reads server.api_key_file into server.api_keys, resolves server.http_threads = 0.
Status finalize_config(Config& config);

// All layers plus finalize. An empty path means no file.
Result<Config> load_config(const std::string& yaml_path_or_empty,
                           const std::map<std::string, std::string>& env,
                           const std::vector<ConfigOverride>& overrides);

}  // namespace llmserve
