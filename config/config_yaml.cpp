// The YAML layer of config_loader.h.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "config/config_loader.h"
#include "config/key_suggest.h"

namespace llmserve {
namespace {

std::string where(const std::string& source, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return source;
  return source + ":" + std::to_string(m.line + 1);
}

std::string node_kind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing (null)";
    default:
      return "a scalar";
  }
}

Result<RawValue> raw_of(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return RawValue::null();
    case YAML::NodeType::Scalar:
      return RawValue::text(node.Scalar());
    case YAML::NodeType::Sequence: {
      std::vector<std::string> items;
      for (const YAML::Node& item : node) {
        if (!item.IsScalar()) {
          return invalid_argument("list items must be strings, got " + node_kind(item));
        }
        items.push_back(item.Scalar());
      }
      return RawValue::list(std::move(items));
    }
    default:
      return invalid_argument("expected a value, got " + node_kind(node));
  }
}

Status apply_section(Config& config, std::string_view section, const YAML::Node& body,
                     const std::string& source, std::vector<std::string>* keys_seen) {
  if (body.IsNull()) return Status::ok();  // "logging:" with every key commented out
  if (!body.IsMap()) {
    return invalid_argument(where(source, body) + ": " + std::string(section) +
                            ": expected a mapping of keys, got " + node_kind(body));
  }
  std::set<std::string> seen;
  for (const auto& kv : body) {
    const YAML::Node key_node = kv.first;
    const YAML::Node value_node = kv.second;
    const std::string name = key_node.IsScalar() ? key_node.Scalar() : "?";
    const std::string full = std::string(section) + "." + name;
    const std::string at = where(source, key_node);
    const ConfigKey* key = find_config_key(section, name);
    if (key == nullptr) {
      return invalid_argument(at + ": " + full + ": unknown key" + unknown_key_hint(section, name));
    }
    if (!seen.insert(name).second) return invalid_argument(at + ": " + full + ": duplicate key");
    Result<RawValue> raw = raw_of(value_node);
    Status st = raw.is_ok() ? key->set(config, *raw) : raw.status();
    if (!st.is_ok()) return invalid_argument(at + ": " + full + ": " + st.message());
    config.sources[full] = at;
    if (keys_seen != nullptr) keys_seen->push_back(full);
  }
  return Status::ok();
}

Status apply_root(Config& config, const YAML::Node& root, const std::string& source,
                  std::vector<std::string>* keys_seen) {
  if (root.IsNull()) return Status::ok();  // an empty file
  if (!root.IsMap()) {
    return invalid_argument(where(source, root) +
                            ": expected a mapping of sections (server, model, engine, logging), "
                            "got " +
                            node_kind(root));
  }
  std::set<std::string> seen;
  for (const auto& kv : root) {
    const YAML::Node key_node = kv.first;
    const YAML::Node body = kv.second;
    const std::string name = key_node.IsScalar() ? key_node.Scalar() : "?";
    const std::string at = where(source, key_node);
    const auto& sections = config_sections();
    if (std::find(sections.begin(), sections.end(), name) == sections.end()) {
      return invalid_argument(at + ": " + name + ": unknown section" + unknown_section_hint(name));
    }
    if (!seen.insert(name).second)
      return invalid_argument(at + ": " + name + ": duplicate section");
    LLMSERVE_RETURN_IF_ERROR(apply_section(config, name, body, source, keys_seen));
  }
  return Status::ok();
}

}  // namespace

Status apply_yaml_text(Config& config, std::string_view yaml, const std::string& source_name,
                       std::vector<std::string>* keys_seen) {
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    return apply_root(config, root, source_name, keys_seen);
  } catch (const YAML::Exception& e) {
    std::string at = source_name;
    if (!e.mark.is_null()) {
      at += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    }
    return invalid_argument(at + ": malformed YAML: " + e.msg);
  } catch (const std::exception& e) {
    return invalid_argument(source_name + ": cannot read YAML: " + e.what());
  }
}

Status apply_yaml_file(Config& config, const std::string& path,
                       std::vector<std::string>* keys_seen) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open config file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return not_found(path + ": cannot read config file");
  return apply_yaml_text(config, text.str(), path, keys_seen);
}

}  // namespace llmserve
