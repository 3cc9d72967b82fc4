#include "config/config_loader.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "config/key_suggest.h"
#include "config/value_parse.h"

namespace llmserve {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string source_of(const Config& c, const std::string& key) {
  const auto it = c.sources.find(key);
  return it == c.sources.end() ? "default" : it->second;
}

// "engine.max_num_seqs (flag --max-num-seqs)"
std::string named(const Config& c, const std::string& key) {
  return key + " (" + source_of(c, key) + ")";
}

Result<std::vector<std::string>> read_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open API key file \"" + path + "\"");
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(in, line)) {
    const std::string_view t = trim(line);
    if (t.empty() || t.front() == '#') continue;
    keys.emplace_back(t);
  }
  if (keys.empty()) {
    return invalid_argument("API key file \"" + path +
                            "\" holds no keys (that would silently turn authentication off)");
  }
  return keys;
}

}  // namespace

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

Status apply_env(Config& config, const std::map<std::string, std::string>& env) {
  static constexpr std::string_view kPrefix = "LLMSERVE_";
  for (const auto& [var, value] : env) {
    if (var.rfind(kPrefix, 0) != 0) continue;
    const std::string rest = lower(var.substr(kPrefix.size()));
    // The longest section whose name and "_" start the rest: sections may hold "_" themselves
    // (LLMSERVE_KV_TRANSFER_ROLE is kv_transfer.role).
    std::string section;
    for (const auto& s : config_sections()) {
      const std::string head = std::string(s) + "_";
      if (rest.rfind(head, 0) == 0 && head.size() > section.size() + 1) section = s;
    }
    if (section.empty()) continue;
    const std::string name = rest.substr(section.size() + 1);
    const std::string full = section + "." + name;
    const ConfigKey* key = find_config_key(section, name);
    if (key == nullptr) {
      return invalid_argument("env " + var + ": " + full + ": unknown key" +
                              unknown_key_hint(section, name));
    }
    const Status st = key->set(config, RawValue::text(value));
    if (!st.is_ok()) return invalid_argument("env " + var + ": " + full + ": " + st.message());
    config.sources[full] = "env " + var;
  }
  return Status::ok();
}

Status apply_overrides(Config& config, const std::vector<ConfigOverride>& overrides) {
  for (const ConfigOverride& o : overrides) {
    const size_t dot = o.key.find('.');
    const ConfigKey* key = dot == std::string::npos
                               ? nullptr
                               : find_config_key(std::string_view(o.key).substr(0, dot),
                                                 std::string_view(o.key).substr(dot + 1));
    if (key == nullptr) return invalid_argument(o.source + ": " + o.key + ": unknown key");
    const Status st = key->set(config, o.value);
    if (!st.is_ok()) return invalid_argument(o.source + ": " + o.key + ": " + st.message());
    config.sources[o.key] = o.source;
  }
  return Status::ok();
}

Status finalize_config(Config& config) {
  const ServerSection& s = config.server;
  const EngineSection& e = config.engine;
  const ModelSection& m = config.model;
  if (s.tls_cert_file.empty() != s.tls_key_file.empty()) {
    return invalid_argument(named(config, "server.tls_cert_file") + " and " +
                            named(config, "server.tls_key_file") +
                            ": set both for TLS, or neither");
  }
  if (s.http_port != 0 && s.http_port == s.grpc_port) {
    return invalid_argument(named(config, "server.http_port") + " and " +
                            named(config, "server.grpc_port") + ": must differ, both are " +
                            std::to_string(s.http_port));
  }
  if (e.max_num_batched_tokens < e.max_num_seqs) {
    return invalid_argument(named(config, "engine.max_num_batched_tokens") +
                            ": must be >= " + named(config, "engine.max_num_seqs") + ", got " +
                            std::to_string(e.max_num_batched_tokens) + " < " +
                            std::to_string(e.max_num_seqs));
  }
  if (!e.enable_chunked_prefill && m.max_model_len > 0 &&
      e.max_num_batched_tokens < m.max_model_len) {
    return invalid_argument(named(config, "engine.max_num_batched_tokens") +
                            ": must be >= " + named(config, "model.max_model_len") +
                            " when engine.enable_chunked_prefill is false, got " +
                            std::to_string(e.max_num_batched_tokens) + " < " +
                            std::to_string(m.max_model_len));
  }
  if (m.load_format == LoadFormat::kDummy && trim(m.dummy_preset).empty()) {
    return invalid_argument(named(config, "model.dummy_preset") +
                            ": must name a shape when model.load_format is dummy");
  }
  if (m.load_format != LoadFormat::kDummy && trim(m.path).empty()) {
    return invalid_argument(named(config, "model.path") + ": must not be empty");
  }
  // An explicit endpoint replaces host and port; one of those changed too is a contradiction.
  const KvEventsSection& ke = config.kv_events;
  if (!ke.endpoint.empty() && (!ke.host.empty() || ke.port != KvEventsSection{}.port)) {
    return invalid_argument(named(config, "kv_events.endpoint") + ": set it or " +
                            named(config, "kv_events.host") + " / " +
                            named(config, "kv_events.port") + ", not both");
  }
  if (!s.api_key_file.empty()) {
    Result<std::vector<std::string>> keys = read_key_file(s.api_key_file);
    if (!keys.is_ok()) {
      return Status(keys.status().code(),
                    named(config, "server.api_key_file") + ": " + keys.status().message());
    }
    for (std::string& k : *keys) {
      auto& list = config.server.api_keys;
      if (std::find(list.begin(), list.end(), k) == list.end()) list.push_back(std::move(k));
    }
  }
  KvTransferSection& kt = config.kv_transfer;
  if (!kt.secret_file.empty()) {
    std::ifstream in(kt.secret_file);
    std::string line;
    if (!in || !std::getline(in, line)) {
      return not_found(named(config, "kv_transfer.secret_file") + ": cannot read \"" +
                       kt.secret_file + "\"");
    }
    kt.secret = std::string(trim(line));
    config.sources["kv_transfer.secret"] = "kv_transfer.secret_file";
  }
  if (kt.role != "none" && kt.secret.empty()) {
    return invalid_argument(
        named(config, "kv_transfer.secret") + ": must be set (or kv_transfer.secret_file) when " +
        named(config, "kv_transfer.role") + " is " + kt.role +
        ": the deployment's daemons prove it to each other before any KV moves");
  }
  if (kt.role != "none" && kt.secret.size() < 16) {
    return invalid_argument(named(config, "kv_transfer.secret") +
                            ": must be at least 16 bytes, got " + std::to_string(kt.secret.size()));
  }
  if (config.server.http_threads == 0) {
    config.server.http_threads = e.max_num_seqs + 16;
    config.sources["server.http_threads"] = "derived: engine.max_num_seqs + 16";
  }
  return Status::ok();
}

Result<Config> load_config(const std::string& yaml_path_or_empty,
                           const std::map<std::string, std::string>& env,
                           const std::vector<ConfigOverride>& overrides) {
  Config config;
  if (!yaml_path_or_empty.empty()) {
    LLMSERVE_RETURN_IF_ERROR(apply_yaml_file(config, yaml_path_or_empty));
  }
  LLMSERVE_RETURN_IF_ERROR(apply_env(config, env));
  LLMSERVE_RETURN_IF_ERROR(apply_overrides(config, overrides));
  LLMSERVE_RETURN_IF_ERROR(finalize_config(config));
  return config;
}

}  // namespace llmserve
