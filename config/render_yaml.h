// Writes a Config as documented YAML: every key with its help, range and environment variable
// as comments. config/default.yaml was made with render_config_yaml(Config{}).
#pragma once

#include <string>

#include "config/config.h"

namespace llmserve {

std::string render_config_yaml(const Config& config);

}  // namespace llmserve
