// tokenizer_spec_from_hf_dir: an HF tokenizer.json (BPE model) plus tokenizer_config.json.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/tokenizer/hf_vocab.h"
#include "engine/tokenizer/stop_tokens.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/wordpiece_spec.h"

namespace llmserve {
namespace {

using nlohmann::json;
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

Result<json> read_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return data_loss(path.string() + " is not valid JSON");
  return j;
}

std::string str_or(const json& j, const char* key, std::string fallback = "") {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool bool_or(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string regex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view(R"(\^$.|?*+()[]{}/-)").find(c) != std::string_view::npos)
      out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// Collects the regex sequence of a byte-level pre_tokenizer; false for unsupported parts.
Status collect_patterns(const json& pre, std::vector<std::string>& patterns) {
  if (pre.is_null()) return Status::ok();
  const std::string type = str_or(pre, "type");
  if (type == "Sequence") {
    for (const json& p : pre.value("pretokenizers", json::array())) {
      LLMSERVE_RETURN_IF_ERROR(collect_patterns(p, patterns));
    }
    return Status::ok();
  }
  if (type == "ByteLevel") {
    if (bool_or(pre, "add_prefix_space", false)) {
      return unimplemented("tokenizer.json ByteLevel add_prefix_space=true is not supported");
    }
    if (bool_or(pre, "use_regex", true)) patterns.emplace_back(kGpt2Pattern);
    return Status::ok();
  }
  if (type == "Digits") {
    patterns.emplace_back(bool_or(pre, "individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
    return Status::ok();
  }
  if (type == "Split") {
    const std::string behavior = str_or(pre, "behavior", "Isolated");
    if (behavior != "Isolated" || bool_or(pre, "invert", false)) {
      return unimplemented("tokenizer.json Split behavior '" + behavior + "' is not supported");
    }
    const json& pattern = pre.value("pattern", json::object());
    if (pattern.contains("Regex")) {
      patterns.push_back(str_or(pattern, "Regex"));
    } else {
      patterns.push_back(regex_escape(str_or(pattern, "String")));
    }
    return Status::ok();
  }
  return unimplemented("tokenizer.json pre_tokenizer type '" + type + "' is not supported");
}

bool contains_type(const json& j, std::string_view type) {
  if (j.is_object()) {
    if (j.value("type", "") == type) return true;
    for (const auto& [k, v] : j.items()) {
      if (contains_type(v, type)) return true;
    }
  } else if (j.is_array()) {
    for (const json& v : j) {
      if (contains_type(v, type)) return true;
    }
  }
  return false;
}

// SentencePiece-style space handling from the normalizer / pre_tokenizer.
void read_space_prefix(const json& tok, TokenizerSpec& spec) {
  spec.add_space_prefix = false;
  if (contains_type(tok.value("normalizer", json()), "Prepend")) {
    spec.add_space_prefix = true;
    return;
  }
  std::vector<const json*> stack{&tok["pre_tokenizer"]};
  while (!stack.empty()) {
    const json* j = stack.back();
    stack.pop_back();
    if (j->is_array()) {
      for (const json& v : *j) stack.push_back(&v);
    } else if (j->is_object()) {
      if (j->value("type", "") == "Metaspace") {
        const std::string scheme = str_or(
            *j, "prepend_scheme", bool_or(*j, "add_prefix_space", true) ? "always" : "never");
        spec.add_space_prefix = scheme != "never";
        spec.space_prefix_first_only = scheme == "first";
        return;
      }
      for (const auto& [k, v] : j->items()) stack.push_back(&v);
    }
  }
}

int32_t token_id_of(const json& cfg_value, const std::unordered_map<std::string, int32_t>& ids) {
  std::string s = cfg_value.is_string()   ? cfg_value.get<std::string>()
                  : cfg_value.is_object() ? str_or(cfg_value, "content")
                                          : "";
  auto it = ids.find(s);
  return it == ids.end() ? -1 : it->second;
}

}  // namespace

Result<TokenizerSpec> tokenizer_spec_from_hf_dir(const std::string& dir) {
  const std::filesystem::path root(dir);
  if (!std::filesystem::exists(root / "tokenizer.json") &&
      std::filesystem::exists(root / "vocab.txt")) {
    return wordpiece_spec_from_vocab_txt(dir);  // a BERT folder without tokenizer.json
  }
  LLMSERVE_ASSIGN_OR_RETURN(json tok, read_json(root / "tokenizer.json"));
  json cfg = json::object();
  if (std::filesystem::exists(root / "tokenizer_config.json")) {
    LLMSERVE_ASSIGN_OR_RETURN(cfg, read_json(root / "tokenizer_config.json"));
  }
  if (!tok.is_object() || !tok.contains("model") || !tok["model"].is_object()) {
    return data_loss("tokenizer.json has no model object");
  }
  const json& model = tok["model"];
  if (str_or(model, "type", "BPE") == "WordPiece") {
    return wordpiece_spec_from_hf_json(tok, cfg);
  }
  if (str_or(model, "type", "BPE") != "BPE") {
    return unimplemented("tokenizer.json model type '" + str_or(model, "type") +
                         "' is not supported");
  }
  TokenizerSpec spec;
  const json& normalizer = tok.value("normalizer", json());
  const bool spm = contains_type(tok.value("decoder", json()), "ByteFallback") ||
                   contains_type(tok.value("pre_tokenizer", json()), "Metaspace") ||
                   contains_type(normalizer, "Prepend") || bool_or(model, "byte_fallback", false);
  spec.kind = spm ? TokenizerKind::kSentencePieceBpe : TokenizerKind::kByteLevelBpe;

  LLMSERVE_ASSIGN_OR_RETURN(auto ids, read_hf_vocab(tok, &spec));
  if (spm) {
    for (size_t i = 0; i < spec.tokens.size(); ++i) {
      if (spec.token_types[i] == TokenType::kNormal && spec.tokens[i].size() == 6 &&
          spec.tokens[i].rfind("<0x", 0) == 0) {
        spec.token_types[i] = TokenType::kByte;
      }
    }
  }

  for (const json& m : model.value("merges", json::array())) {
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ', 1);
      if (space == std::string::npos)
        return data_loss("tokenizer.json merge '" + s + "' has no space");
      spec.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return data_loss("tokenizer.json merge entry is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  spec.ignore_merges = bool_or(model, "ignore_merges", false);
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = ids.find(model["unk_token"].get<std::string>());
    if (it != ids.end()) {
      spec.unk_id = it->second;
      if (spec.token_types[it->second] == TokenType::kNormal)
        spec.token_types[it->second] = TokenType::kUnknown;
    }
  }

  if (spm) {
    read_space_prefix(tok, spec);
  } else {
    if (!normalizer.is_null() && !contains_type(normalizer, "NFC")) {
      return unimplemented("tokenizer.json normalizer '" + str_or(normalizer, "type") +
                           "' is not supported for byte-level BPE");
    }
    LLMSERVE_RETURN_IF_ERROR(
        collect_patterns(tok.value("pre_tokenizer", json()), spec.pre_patterns));
    spec.pre = "hf";
  }

  if (cfg.contains("bos_token")) spec.bos_id = token_id_of(cfg["bos_token"], ids);
  if (cfg.contains("eos_token")) spec.eos_id = token_id_of(cfg["eos_token"], ids);
  if (cfg.contains("pad_token")) spec.pad_id = token_id_of(cfg["pad_token"], ids);
  if (spec.unk_id < 0 && cfg.contains("unk_token"))
    spec.unk_id = token_id_of(cfg["unk_token"], ids);
  spec.add_bos = bool_or(cfg, "add_bos_token", false);
  spec.add_eos = bool_or(cfg, "add_eos_token", false);
  // The post-processor is what HF tokenizers itself applies; it wins when it names the tokens.
  const json& post = tok.value("post_processor", json());
  if (post.is_object() && str_or(post, "type") == "TemplateProcessing" && post.contains("single")) {
    const json& single = post["single"];
    if (single.is_array() && !single.empty()) {
      spec.add_bos = single.front().contains("SpecialToken");
      spec.add_eos = single.size() > 1 && single.back().contains("SpecialToken");
    }
  }
  if (cfg.contains("chat_template")) {
    const json& t = cfg["chat_template"];
    if (t.is_string()) {
      spec.chat_template = t.get<std::string>();
    } else if (t.is_array()) {
      for (const json& named : t) {
        if (str_or(named, "name") == "default") spec.chat_template = str_or(named, "template");
      }
    }
  }
  // transformers >= 4.43 saves the template beside the config as chat_template.jinja.
  if (spec.chat_template.empty()) {
    std::ifstream jinja(root / "chat_template.jinja", std::ios::binary);
    if (jinja) {
      std::ostringstream text;
      text << jinja.rdbuf();
      spec.chat_template = text.str();
    }
  }
  fill_stop_ids(spec);
  return spec;
}

}  // namespace llmserve
