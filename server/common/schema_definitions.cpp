#include "server/common/schema_definitions.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace llmserve {

using json = nlohmann::ordered_json;

namespace {

// Rewrites every "$ref" in `node` whose target is a renamed definition or a path below one.
void rewrite_refs(json& node, const std::map<std::string, std::string>& renamed) {
  if (node.is_array()) {
    for (json& item : node) rewrite_refs(item, renamed);
    return;
  }
  if (!node.is_object()) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (it.key() == "$ref" && it.value().is_string()) {
      const std::string ref = it.value().get<std::string>();
      for (const auto& [from, to] : renamed) {
        if (ref == from || ref.rfind(from + "/", 0) == 0) {
          it.value() = to + ref.substr(from.size());
          break;
        }
      }
    } else {
      rewrite_refs(it.value(), renamed);
    }
  }
}

}  // namespace

void hoist_schema_definitions(json& schema, json& defs) {
  if (!schema.is_object()) return;
  if (!defs.is_object()) defs = json::object();
  std::vector<std::pair<std::string, json>> moved;  // new name, definition
  std::map<std::string, std::string> renamed;       // old reference prefix -> new one
  for (const char* key : {"$defs", "definitions"}) {
    if (!schema.contains(key) || !schema[key].is_object()) continue;
    for (auto& [name, value] : schema[key].items()) {
      std::string target = name;
      for (int n = 2; defs.contains(target) && defs[target] != value; ++n) {
        target = name + "_" + std::to_string(n);
      }
      renamed[std::string("#/") + key + "/" + name] = "#/$defs/" + target;
      moved.emplace_back(target, value);
    }
    schema.erase(key);
  }
  if (moved.empty()) return;
  rewrite_refs(schema, renamed);
  for (auto& [name, value] : moved) {
    rewrite_refs(value, renamed);
    defs[name] = std::move(value);
  }
}

}  // namespace llmserve
