#include "config/config_cli.h"

#include <algorithm>
#include <cctype>

namespace llmserve {
namespace {

std::string type_name(const ConfigKey& k) {
  switch (k.type) {
    case KeyType::kInt:
      return "INT";
    case KeyType::kDouble:
      return "NUM";
    case KeyType::kSize:
      return "SIZE";
    case KeyType::kString:
      return "TEXT";
    case KeyType::kStringList:
      return "LIST";
    case KeyType::kEnum:
      return "{" + k.range + "}";
    case KeyType::kBool:
      return "";
  }
  return "";
}

std::string description(const ConfigKey& k) {
  std::string d = k.help;
  if (k.type != KeyType::kEnum && k.type != KeyType::kBool && !k.rule_text().empty()) {
    d += " " + k.rule_text();
  }
  std::string def = k.get(Config{});
  if (def.empty()) def = k.type == KeyType::kStringList ? "none" : "\"\"";
  return d + " Default: " + def + ". Env: " + k.env_name() + ".";
}

std::string flag_names(const ConfigKey& k) {
  std::vector<std::string> names = {k.flag_name()};
  for (std::string_view a : k.aliases) names.push_back("--" + std::string(a));
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  if (k.type == KeyType::kBool) {
    for (const std::string& n : names) out += ",!--no-" + n.substr(2);
  }
  return out;
}

}  // namespace

void add_config_options(CLI::App& cmd, ConfigFlags& flags) {
  cmd.add_option("--config", flags.config_file,
                 "YAML configuration file (see config/default.yaml). Env: " +
                     std::string(kConfigFileEnv) + ".")
      ->type_name("FILE");
  for (std::string_view section : config_sections()) {
    CLI::Option_group* group = cmd.add_option_group(
        std::string(section), "Configuration keys of " + std::string(section) + ":");
    for (const ConfigKey& k : config_keys()) {
      if (k.section != section) continue;
      CLI::Option* opt = nullptr;
      if (k.type == KeyType::kBool) {
        opt = group->add_flag(flag_names(k))->description(description(k));
      } else {
        opt =
            group->add_option(flag_names(k))->description(description(k))->type_name(type_name(k));
        if (k.type == KeyType::kStringList) {
          opt->take_all()->delimiter(',');
        } else {
          opt->take_last();
        }
      }
      flags.options.emplace_back(&k, opt);
    }
  }
}

std::vector<ConfigOverride> ConfigFlags::overrides() const {
  std::vector<ConfigOverride> out;
  for (const auto& [key, opt] : options) {
    if (opt == nullptr || opt->count() == 0 || opt->results().empty()) continue;
    const std::vector<std::string>& results = opt->results();
    RawValue value = key->type == KeyType::kStringList ? RawValue::list(results)
                                                       : RawValue::text(results.back());
    out.push_back({key->full_name(), std::move(value), "flag " + key->flag_name()});
  }
  return out;
}

Result<Config> load_config(const ConfigFlags& flags,
                           const std::map<std::string, std::string>& env) {
  std::string path = flags.config_file;
  if (path.empty()) {
    const auto it = env.find(std::string(kConfigFileEnv));
    if (it != env.end()) path = it->second;
  }
  return load_config(path, env, flags.overrides());
}

}  // namespace llmserve
