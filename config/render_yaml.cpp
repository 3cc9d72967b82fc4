#include "config/render_yaml.h"

#include "config/config_keys.h"
#include "config/value_parse.h"

namespace llmserve {
namespace {

std::string yaml_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string yaml_value(const ConfigKey& k, const Config& c) {
  const std::string v = k.get(c);
  if (k.type == KeyType::kString) return yaml_quote(v);
  if (k.type != KeyType::kStringList) return v;
  std::string out = "[";
  for (const std::string& item : split_list(v)) {
    out += (out.size() > 1 ? ", " : "") + yaml_quote(item);
  }
  return out + "]";
}

}  // namespace

std::string render_config_yaml(const Config& config) {
  std::string out;
  for (std::string_view section : config_sections()) {
    out += std::string(section) + ":\n";
    bool first = true;
    for (const ConfigKey& k : config_keys()) {
      if (k.section != section) continue;
      if (!first) out += "\n";
      first = false;
      out += "  # " + k.help + "\n";
      std::string meta = k.rule_text();
      if (k.type == KeyType::kSize) meta += " Units: B, KB, KiB, MB, MiB, GB, GiB, TB, TiB.";
      if (k.type == KeyType::kStringList) meta += "A YAML list; in env, comma-separated.";
      if (!meta.empty()) out += "  # " + meta + "\n";
      std::string flags = k.flag_name();
      for (std::string_view a : k.aliases) flags += " or --" + std::string(a);
      out += "  # Env " + k.env_name() + "; flag " + flags + ".\n";
      out += "  " + std::string(k.name) + ": " + yaml_value(k, config) + "\n";
    }
    out += "\n";
  }
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace llmserve
