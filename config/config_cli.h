// Command-line layer: `--config FILE` plus one flag per configuration key, e.g.
// `--engine.block-size 32` (alias `--block-size`), bools as `--engine.cuda-graphs[=false]` /
// `--no-engine.cuda-graphs`, lists repeated or comma-separated (`--api-key a --api-key b,c`).
//
// Typical use in a subcommand:
//   ConfigFlags flags;
//   add_config_options(*serve, flags);      // before parsing; `flags` must outlive parsing
//   ... app.parse(argc, argv) ...
//   Result<Config> cfg = load_config(flags, current_environment());
//   if (!cfg.is_ok()) { print cfg.status().message(); exit code 2; }
//   log(describe(*cfg));
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/config_keys.h"
#include "config/config_loader.h"
#include "engine/core/status.h"

namespace llmserve {

struct ConfigFlags {
  std::string config_file;  // --config FILE; "" = $LLMSERVE_CONFIG, else no file
  std::vector<std::pair<const ConfigKey*, CLI::Option*>> options;  // set by add_config_options

  // The keys given on the command line, in table order.
  std::vector<ConfigOverride> overrides() const;
};

// Registers --config and one option per key (grouped by section in --help, each with its
// range, default and environment variable). `cmd` and `flags` must outlive parsing.
void add_config_options(CLI::App& cmd, ConfigFlags& flags);

// The whole load: file from --config (or $LLMSERVE_CONFIG), then env, then flags.
Result<Config> load_config(const ConfigFlags& flags, const std::map<std::string, std::string>& env);

}  // namespace llmserve
