// WordPiece TokenizerSpecs from a BERT GGUF, an HF tokenizer.json and a bare vocab.txt.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "engine/model/gguf_file.h"
#include "engine/tokenizer/hf_vocab.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/wordpiece_spec.h"

namespace llmserve {
namespace {

using nlohmann::json;

constexpr std::string_view kPhantomSpace = "\xE2\x96\x81";  // U+2581, llama.cpp's word start

int32_t find_id(const TokenizerSpec& spec, std::string_view text) {
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    if (spec.tokens[i] == text) return static_cast<int32_t>(i);
  }
  return -1;
}

// [CLS] / [SEP] / [UNK] / [PAD] by name where the source named none.
void fill_bert_ids(TokenizerSpec& spec) {
  if (spec.bos_id < 0) spec.bos_id = find_id(spec, "[CLS]");
  if (spec.eos_id < 0) spec.eos_id = find_id(spec, "[SEP]");
  if (spec.unk_id < 0) spec.unk_id = find_id(spec, "[UNK]");
  if (spec.pad_id < 0) spec.pad_id = find_id(spec, "[PAD]");
  if (spec.token_types.empty()) spec.token_types.assign(spec.tokens.size(), TokenType::kNormal);
  // As BertTokenizer's never-split tokens: found whole in the raw text.
  for (int32_t id : {spec.bos_id, spec.eos_id, spec.pad_id, spec.unk_id, find_id(spec, "[MASK]")}) {
    if (id >= 0) spec.token_types[static_cast<size_t>(id)] = TokenType::kControl;
  }
}

Result<json> parse(const std::string& text, const char* what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return data_loss(std::string(what) + " is not a JSON object");
  return j;
}

bool flag(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

int32_t named_id(const json& cfg, const char* key,
                 const std::unordered_map<std::string, int32_t>& ids) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return -1;
  std::string s = it->is_string()   ? it->get<std::string>()
                  : it->is_object() ? it->value("content", std::string())
                                    : std::string();
  auto f = ids.find(s);
  return f == ids.end() ? -1 : f->second;
}

}  // namespace

Result<TokenizerSpec> wordpiece_spec_from_gguf(const GgufFile& gguf) {
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kWordPiece;
  const auto tokens = gguf.get_string_array("tokenizer.ggml.tokens");
  if (!tokens || tokens->empty())
    return data_loss("GGUF tokenizer.ggml.tokens is missing or empty");
  const size_t n = tokens->size();
  std::vector<int32_t> types;
  if (gguf.find("tokenizer.ggml.token_type") != nullptr) {
    const auto t = gguf.get_i32_array("tokenizer.ggml.token_type");
    if (!t || t->size() != n) {
      return data_loss("GGUF tokenizer.ggml.token_type is not one integer per token");
    }
    types.assign(t->begin(), t->end());
  }
  spec.tokens.reserve(n);
  spec.token_types.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string_view tok = (*tokens)[i];
    const int32_t type = types.empty() ? 1 : types[i];
    spec.token_types.push_back(type >= 1 && type <= 6 ? static_cast<TokenType>(type)
                                                      : TokenType::kNormal);
    // llama.cpp's converter: control tokens as they are, a word start with U+2581 before it,
    // a continuation ("##x" in HF) as "x". Back to HF's form.
    if (type == static_cast<int32_t>(TokenType::kControl)) {
      spec.tokens.emplace_back(tok);
    } else if (tok.starts_with(kPhantomSpace)) {
      spec.tokens.emplace_back(tok.substr(kPhantomSpace.size()));
    } else {
      spec.tokens.push_back(spec.wordpiece.prefix + std::string(tok));
    }
  }
  auto id = [&](std::string_view key) -> int32_t {
    const auto v = gguf.get_i64(key);
    return v && *v >= 0 && static_cast<size_t>(*v) < n ? static_cast<int32_t>(*v) : -1;
  };
  spec.bos_id = id("tokenizer.ggml.cls_token_id");
  if (spec.bos_id < 0) spec.bos_id = id("tokenizer.ggml.bos_token_id");
  spec.eos_id = id("tokenizer.ggml.seperator_token_id");
  if (spec.eos_id < 0) spec.eos_id = id("tokenizer.ggml.eos_token_id");
  spec.unk_id = id("tokenizer.ggml.unknown_token_id");
  spec.pad_id = id("tokenizer.ggml.padding_token_id");
  fill_bert_ids(spec);
  // llama.cpp's BERT tokenizer always puts [CLS] ... [SEP] around a text, lowercases and strips
  // accents (the GGUF keeps no do_lower_case).
  spec.add_bos = spec.bos_id >= 0;
  spec.add_eos = spec.eos_id >= 0;
  spec.add_space_prefix = false;
  return spec;
}

Result<TokenizerSpec> wordpiece_spec_from_hf_json(const json& tok, const json& cfg) {
  const json& model = tok["model"];
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kWordPiece;
  spec.add_space_prefix = false;
  LLMSERVE_ASSIGN_OR_RETURN(auto ids, read_hf_vocab(tok, &spec));
  spec.wordpiece.prefix = model.value("continuing_subword_prefix", std::string("##"));
  if (auto it = model.find("max_input_chars_per_word");
      it != model.end() && it->is_number_integer()) {
    spec.wordpiece.max_chars_per_word = it->get<int64_t>();
  }
  if (auto it = ids.find(model.value("unk_token", std::string("[UNK]"))); it != ids.end()) {
    spec.unk_id = it->second;
  }
  const json& norm = tok.value("normalizer", json());
  if (norm.is_object()) {
    if (norm.value("type", std::string()) != "BertNormalizer") {
      return unimplemented("tokenizer.json WordPiece normalizer '" +
                           norm.value("type", std::string()) +
                           "' is not supported (BertNormalizer is)");
    }
    spec.wordpiece.clean_text = flag(norm, "clean_text", true);
    spec.wordpiece.chinese_chars = flag(norm, "handle_chinese_chars", true);
    spec.wordpiece.lowercase = flag(norm, "lowercase", true);
    spec.wordpiece.strip_accents = flag(norm, "strip_accents", spec.wordpiece.lowercase);
  } else {
    spec.wordpiece.clean_text = spec.wordpiece.chinese_chars = false;
    spec.wordpiece.strip_accents = spec.wordpiece.lowercase = false;
  }
  const json& pre = tok.value("pre_tokenizer", json());
  if (pre.is_object() && pre.value("type", std::string()) != "BertPreTokenizer") {
    return unimplemented("tokenizer.json WordPiece pre_tokenizer '" +
                         pre.value("type", std::string()) +
                         "' is not supported (BertPreTokenizer is)");
  }
  // [CLS] $A [SEP] from the post-processor (BertProcessing's cls / sep, or a template).
  const json& post = tok.value("post_processor", json());
  const std::string post_type = post.is_object() ? post.value("type", std::string()) : "";
  if (post_type == "BertProcessing") {
    for (auto [key, out] :
         {std::pair<const char*, int32_t*>{"cls", &spec.bos_id}, {"sep", &spec.eos_id}}) {
      if (post.contains(key) && post[key].is_array() && post[key].size() == 2 &&
          post[key][1].is_number_integer()) {
        *out = post[key][1].get<int32_t>();
      }
    }
    spec.add_bos = spec.add_eos = true;
  } else if (post_type == "TemplateProcessing" && post.contains("single") &&
             post["single"].is_array() && !post["single"].empty()) {
    const json& single = post["single"];
    auto special_id = [&](const json& item) -> int32_t {
      if (!item.is_object() || !item.contains("SpecialToken")) return -1;
      const std::string name = item["SpecialToken"].value("id", std::string());
      auto it = ids.find(name);
      return it == ids.end() ? -1 : it->second;
    };
    spec.bos_id = special_id(single.front());
    spec.add_bos = spec.bos_id >= 0;
    if (single.size() > 1) {
      spec.eos_id = special_id(single.back());
      spec.add_eos = spec.eos_id >= 0;
    }
  } else if (!post.is_null()) {
    return unimplemented("tokenizer.json WordPiece post_processor '" + post_type +
                         "' is not supported (BertProcessing, TemplateProcessing are)");
  }
  if (spec.bos_id < 0) spec.bos_id = named_id(cfg, "cls_token", ids);
  if (spec.eos_id < 0) spec.eos_id = named_id(cfg, "sep_token", ids);
  spec.pad_id = named_id(cfg, "pad_token", ids);
  if (spec.unk_id < 0) spec.unk_id = named_id(cfg, "unk_token", ids);
  fill_bert_ids(spec);
  return spec;
}

Result<TokenizerSpec> wordpiece_spec_from_vocab_txt(const std::string& dir) {
  const std::filesystem::path root(dir);
  std::ifstream in(root / "vocab.txt", std::ios::binary);
  if (!in) return not_found("cannot open " + (root / "vocab.txt").string());
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kWordPiece;
  spec.add_space_prefix = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    spec.tokens.push_back(line);
    if (spec.tokens.size() > (1u << 26)) return data_loss("vocab.txt has too many lines");
  }
  if (spec.tokens.empty()) return data_loss((root / "vocab.txt").string() + " is empty");
  json cfg = json::object();
  if (std::filesystem::exists(root / "tokenizer_config.json")) {
    std::ifstream c(root / "tokenizer_config.json", std::ios::binary);
    std::stringstream ss;
    ss << c.rdbuf();
    LLMSERVE_ASSIGN_OR_RETURN(cfg, parse(ss.str(), "tokenizer_config.json"));
  }
  spec.wordpiece.lowercase = flag(cfg, "do_lower_case", true);
  spec.wordpiece.chinese_chars = flag(cfg, "tokenize_chinese_chars", true);
  spec.wordpiece.strip_accents = flag(cfg, "strip_accents", spec.wordpiece.lowercase);
  fill_bert_ids(spec);
  spec.add_bos = spec.bos_id >= 0;
  spec.add_eos = spec.eos_id >= 0;
  return spec;
}

}  // namespace llmserve
