#include "server/common/hf_tokenizer_export.h"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/pre_tokenizer.h"

namespace llmserve {

namespace {

using ordered_json = nlohmann::ordered_json;

TokenType type_of(const TokenizerSpec& spec, size_t id) {
  return id < spec.token_types.size() ? spec.token_types[id] : TokenType::kNormal;
}

ordered_json added_tokens(const TokenizerSpec& spec) {
  ordered_json out = ordered_json::array();
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    const TokenType t = type_of(spec, id);
    if (t != TokenType::kControl && t != TokenType::kUserDefined && t != TokenType::kUnknown) {
      continue;
    }
    out.push_back({{"id", id},
                   {"content", spec.tokens[id]},
                   {"single_word", false},
                   {"lstrip", false},
                   {"rstrip", false},
                   {"normalized", false},
                   {"special", t != TokenType::kUserDefined}});
  }
  return out;
}

ordered_json pre_tokenizer(const std::vector<std::string>& patterns) {
  ordered_json steps = ordered_json::array();
  for (const std::string& p : patterns) {
    steps.push_back({{"type", "Split"},
                     {"pattern", {{"Regex", p}}},
                     {"behavior", "Isolated"},
                     {"invert", false}});
  }
  steps.push_back({{"type", "ByteLevel"},
                   {"add_prefix_space", false},
                   {"trim_offsets", true},
                   {"use_regex", false}});
  return {{"type", "Sequence"}, {"pretokenizers", steps}};
}

// BOS before / EOS after the text, as the spec's add_bos / add_eos say; null when neither.
ordered_json post_processor(const TokenizerSpec& spec) {
  const bool bos = spec.add_bos && spec.bos_id >= 0;
  const bool eos = spec.add_eos && spec.eos_id >= 0;
  if (!bos && !eos) return nullptr;
  auto special = [&](int32_t id) {
    return ordered_json{
        {"SpecialToken", {{"id", spec.tokens[static_cast<size_t>(id)]}, {"type_id", 0}}}};
  };
  auto sequence = [](const char* which) {
    return ordered_json{{"Sequence", {{"id", which}, {"type_id", 0}}}};
  };
  ordered_json single = ordered_json::array(), pair = ordered_json::array();
  ordered_json specials = ordered_json::object();
  for (int32_t id : {bos ? spec.bos_id : -1, eos ? spec.eos_id : -1}) {
    if (id < 0) continue;
    const std::string& name = spec.tokens[static_cast<size_t>(id)];
    specials[name] = {{"id", name}, {"ids", {id}}, {"tokens", {name}}};
  }
  for (ordered_json* seq : {&single, &pair}) {
    for (const char* part :
         seq == &single ? std::vector<const char*>{"A"} : std::vector<const char*>{"A", "B"}) {
      if (bos) seq->push_back(special(spec.bos_id));
      seq->push_back(sequence(part));
      if (eos) seq->push_back(special(spec.eos_id));
    }
  }
  return {{"type", "TemplateProcessing"},
          {"single", single},
          {"pair", pair},
          {"special_tokens", specials}};
}

ordered_json bpe_model(const TokenizerSpec& spec) {
  ordered_json vocab = ordered_json::object();
  for (size_t id = 0; id < spec.tokens.size(); ++id) vocab[spec.tokens[id]] = id;
  ordered_json merges = ordered_json::array();
  for (const auto& [a, b] : spec.merges) merges.push_back(a + " " + b);
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", spec.ignore_merges},
          {"vocab", vocab},
          {"merges", merges}};
}

// The code-point boundaries of a UTF-8 string (0 and size() excluded).
std::vector<size_t> char_boundaries(const std::string& s) {
  std::vector<size_t> out;
  for (size_t i = 1; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) out.push_back(i);
  }
  return out;
}

// SentencePiece BPE as HF's conversion writes it: merges of two normal pieces into a normal
// piece, ranked by the merged piece's score (highest first; ties by its id, then the halves),
// byte fallback to <0xNN>, "▁" for spaces (and before the text when the spec says so).
ordered_json sentencepiece_model(const TokenizerSpec& spec) {
  ordered_json vocab = ordered_json::object();
  for (size_t id = 0; id < spec.tokens.size(); ++id) vocab[spec.tokens[id]] = id;
  std::unordered_set<std::string_view> normal;
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    if (type_of(spec, id) == TokenType::kNormal) normal.insert(spec.tokens[id]);
  }
  struct Merge {
    float score;
    size_t id;
    std::string a, b;
  };
  std::vector<Merge> merges;
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    const std::string& piece = spec.tokens[id];
    if (type_of(spec, id) != TokenType::kNormal) continue;
    const float score = id < spec.scores.size() ? spec.scores[id] : 0.0f;
    for (size_t cut : char_boundaries(piece)) {
      std::string a = piece.substr(0, cut), b = piece.substr(cut);
      if (normal.count(a) && normal.count(b))
        merges.push_back({score, id, std::move(a), std::move(b)});
    }
  }
  std::sort(merges.begin(), merges.end(), [](const Merge& x, const Merge& y) {
    if (x.score != y.score) return x.score > y.score;
    if (x.id != y.id) return x.id < y.id;
    return std::tie(x.a, x.b) < std::tie(y.a, y.b);
  });
  ordered_json merge_list = ordered_json::array();
  for (const Merge& m : merges) merge_list.push_back({m.a, m.b});
  const bool bytes = std::any_of(spec.token_types.begin(), spec.token_types.end(),
                                 [](TokenType t) { return t == TokenType::kByte; });
  ordered_json unk = nullptr;
  if (spec.unk_id >= 0 && static_cast<size_t>(spec.unk_id) < spec.tokens.size()) {
    unk = spec.tokens[static_cast<size_t>(spec.unk_id)];
  }
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", unk},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", true},
          {"byte_fallback", bytes},
          {"ignore_merges", false},
          {"vocab", vocab},
          {"merges", merge_list}};
}

ordered_json token_name(const TokenizerSpec& spec, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= spec.tokens.size()) return nullptr;
  return spec.tokens[static_cast<size_t>(id)];
}

Result<ordered_json> byte_level_json(const TokenizerSpec& spec) {
  std::vector<std::string> patterns = spec.pre_patterns;
  if (patterns.empty()) {
    auto known = PreTokenizer::patterns_for(spec.pre);
    if (!known.is_ok()) return failed_precondition(known.status().message());
    patterns = std::move(known).value();
  }
  // Spaces inside a merge's halves would make "a b" ambiguous; byte-level vocabularies map
  // the space byte to another character, so this only guards against a malformed spec.
  for (const auto& [a, b] : spec.merges) {
    if (a.find(' ') != std::string::npos || b.find(' ') != std::string::npos) {
      return failed_precondition("a BPE merge holds a space: '" + a + "' + '" + b + "'");
    }
  }
  return ordered_json{{"version", "1.0"},
                      {"truncation", nullptr},
                      {"padding", nullptr},
                      {"added_tokens", added_tokens(spec)},
                      {"normalizer", nullptr},
                      {"pre_tokenizer", pre_tokenizer(patterns)},
                      {"post_processor", post_processor(spec)},
                      {"decoder",
                       {{"type", "ByteLevel"},
                        {"add_prefix_space", true},
                        {"trim_offsets", true},
                        {"use_regex", true}}},
                      {"model", bpe_model(spec)}};
}

Result<ordered_json> sentencepiece_json(const TokenizerSpec& spec) {
  const ordered_json to_space = {
      {"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}};
  ordered_json normalizer = nullptr, pre = nullptr;
  if (spec.add_space_prefix && spec.space_prefix_first_only) {
    // Metaspace(prepend_scheme "first"): "▁" before the text only, not after special tokens.
    pre = {
        {"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}, {"split", false}};
  } else if (spec.add_space_prefix) {
    normalizer = {{"type", "Sequence"},
                  {"normalizers", {{{"type", "Prepend"}, {"prepend", "▁"}}, to_space}}};
  } else {
    normalizer = to_space;
  }
  ordered_json decoders = {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
                           {{"type", "ByteFallback"}},
                           {{"type", "Fuse"}}};
  if (spec.add_space_prefix) {
    decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  }
  return ordered_json{{"version", "1.0"},
                      {"truncation", nullptr},
                      {"padding", nullptr},
                      {"added_tokens", added_tokens(spec)},
                      {"normalizer", normalizer},
                      {"pre_tokenizer", pre},
                      {"post_processor", post_processor(spec)},
                      {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
                      {"model", sentencepiece_model(spec)}};
}

// WordPiece (a BERT GGUF): BertNormalizer with the spec's settings, BertPreTokenizer, the
// WordPiece model over the HF-form vocab ("##" continuations), [CLS] $A [SEP].
ordered_json wordpiece_json(const TokenizerSpec& spec) {
  ordered_json vocab = ordered_json::object();
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    if (!vocab.contains(spec.tokens[id])) vocab[spec.tokens[id]] = id;
  }
  const auto& o = spec.wordpiece;
  const std::string unk =
      spec.unk_id >= 0 ? spec.tokens[static_cast<size_t>(spec.unk_id)] : std::string("[UNK]");
  return ordered_json{{"version", "1.0"},
                      {"truncation", nullptr},
                      {"padding", nullptr},
                      {"added_tokens", added_tokens(spec)},
                      {"normalizer",
                       {{"type", "BertNormalizer"},
                        {"clean_text", o.clean_text},
                        {"handle_chinese_chars", o.chinese_chars},
                        {"strip_accents", o.strip_accents},
                        {"lowercase", o.lowercase}}},
                      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
                      {"post_processor", post_processor(spec)},
                      {"decoder", {{"type", "WordPiece"}, {"prefix", o.prefix}, {"cleanup", true}}},
                      {"model",
                       {{"type", "WordPiece"},
                        {"unk_token", unk},
                        {"continuing_subword_prefix", o.prefix},
                        {"max_input_chars_per_word", o.max_chars_per_word},
                        {"vocab", vocab}}}};
}

}  // namespace

Result<std::vector<ExportedFile>> export_hf_tokenizer(const TokenizerSpec& spec,
                                                      const HfExportOptions& options) {
  ordered_json tokenizer;
  if (spec.kind == TokenizerKind::kWordPiece) {
    tokenizer = wordpiece_json(spec);
  } else {
    LLMSERVE_ASSIGN_OR_RETURN(tokenizer, spec.kind == TokenizerKind::kByteLevelBpe
                                             ? byte_level_json(spec)
                                             : sentencepiece_json(spec));
  }

  ordered_json config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                         {"add_bos_token", spec.add_bos},
                         {"add_eos_token", spec.add_eos},
                         {"clean_up_tokenization_spaces", false}};
  if (options.model_max_length > 0) config["model_max_length"] = options.model_max_length;
  for (const auto& [key, id] : {std::pair<const char*, int32_t>{"bos_token", spec.bos_id},
                                {"eos_token", spec.eos_id},
                                {"pad_token", spec.pad_id},
                                {"unk_token", spec.unk_id}}) {
    if (ordered_json name = token_name(spec, id); !name.is_null()) config[key] = name;
  }
  const std::string& tmpl =
      options.chat_template.empty() ? spec.chat_template : options.chat_template;
  if (!tmpl.empty()) config["chat_template"] = tmpl;

  ordered_json generation = ordered_json::object();
  if (spec.bos_id >= 0) generation["bos_token_id"] = spec.bos_id;
  std::vector<int32_t> eos = options.eos_token_ids;
  if (eos.empty() && spec.eos_id >= 0) eos.push_back(spec.eos_id);
  if (eos.size() == 1) generation["eos_token_id"] = eos.front();
  if (eos.size() > 1) generation["eos_token_id"] = eos;

  const auto dump = [](const ordered_json& j) {
    return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace) + "\n";
  };
  return std::vector<ExportedFile>{{"tokenizer.json", dump(tokenizer)},
                                   {"tokenizer_config.json", dump(config)},
                                   {"generation_config.json", dump(generation)}};
}

}  // namespace llmserve
