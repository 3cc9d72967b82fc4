#include "server/common/hf_tokenizer_export.h"

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
    if (t != TokenType::kControl && t != TokenType::kUserDefined) continue;
    out.push_back({{"id", id},
                   {"content", spec.tokens[id]},
                   {"single_word", false},
                   {"lstrip", false},
                   {"rstrip", false},
                   {"normalized", false},
                   {"special", t == TokenType::kControl}});
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

ordered_json token_name(const TokenizerSpec& spec, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= spec.tokens.size()) return nullptr;
  return spec.tokens[static_cast<size_t>(id)];
}

}  // namespace

Result<std::vector<ExportedFile>> export_hf_tokenizer(const TokenizerSpec& spec,
                                                      const HfExportOptions& options) {
  if (spec.kind != TokenizerKind::kByteLevelBpe) {
    return failed_precondition(
        "the model's tokenizer is SentencePiece-style; only byte-level BPE tokenizers can be "
        "exported from a GGUF file (give the router a tokenizer folder instead)");
  }
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
  ordered_json tokenizer = {{"version", "1.0"},
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
