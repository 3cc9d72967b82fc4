// The one table of configuration keys. The YAML, environment and command-line layers, the
// --help text and describe() are all driven by it; adding a key means adding one row in
// config_keys.cpp (and its documented default in config/default.yaml).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "engine/core/status.h"

namespace llmserve {

enum class KeyType { kBool, kInt, kDouble, kSize, kString, kStringList, kEnum };

std::string_view to_string(KeyType t);

// One value as it arrives from a layer, before typing. Scalars come as text; lists either as
// items (YAML sequence, repeated flag) or as one comma-separated text (env, flag).
struct RawValue {
  enum class Kind { kNull, kScalar, kList };
  Kind kind = Kind::kScalar;
  std::string scalar;
  std::vector<std::string> items;

  static RawValue null() { return {Kind::kNull, {}, {}}; }
  static RawValue text(std::string s) { return {Kind::kScalar, std::move(s), {}}; }
  static RawValue list(std::vector<std::string> v) { return {Kind::kList, {}, std::move(v)}; }
};

struct ConfigKey {
  std::string_view section;  // "engine"
  std::string_view name;     // "block_size"
  KeyType type;
  std::string help;   // what it does, with its unit
  std::string range;  // "[1, 256], power of two", "auto|cpu|cuda", "" when any value
  std::vector<std::string_view> aliases;  // short flags without dashes, e.g. "block-size"
  bool secret = false;                    // masked by describe()
  // Types, checks and stores `value`; the error message names neither the key nor the source.
  std::function<Status(Config&, const RawValue&)> set;
  // The value as text that set() accepts back (lists comma-separated, sizes with units).
  std::function<std::string(const Config&)> get;

  std::string full_name() const;  // "engine.block_size"
  std::string env_name() const;   // "LLMSERVE_ENGINE_BLOCK_SIZE"
  std::string flag_name() const;  // "--engine.block-size"
  // The allowed values as a sentence: "Range [1, 256], power of two.", "One of auto|cpu|cuda.",
  // "true or false.", "Must not be empty." or "" when any value goes.
  std::string rule_text() const;
};

const std::vector<ConfigKey>& config_keys();
const std::vector<std::string_view>& config_sections();  // server, model, engine, logging

// nullptr when there is no such key.
const ConfigKey* find_config_key(std::string_view section, std::string_view name);

}  // namespace llmserve
