// Test helper: writes a TokenizerSpec as an HF tokenizer.json (byte-level BPE: vocab, merges,
// control tokens as special added tokens), for tiny models the tests make or copy.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace llmserve::testing {

// dir/tokenizer.json from spec's tokens and merges; token `changed_token`, when >= 0, gets a
// different string (a vocabulary that differs in one token).
inline void write_hf_tokenizer_json(const std::string& dir, const TokenizerSpec& spec,
                                    int changed_token = -1) {
  using nlohmann::json;
  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    std::string text = spec.tokens[id];
    if (static_cast<int>(id) == changed_token) text += "_changed";
    const bool control = !spec.token_types.empty() && spec.token_types[id] == TokenType::kControl;
    if (control) {
      added.push_back({{"id", id}, {"content", text}, {"special", true}});
    } else {
      vocab[text] = id;
    }
  }
  json merges = json::array();
  for (const auto& [a, b] : spec.merges) merges.push_back(a + " " + b);
  const json tok = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
                    {"added_tokens", added},
                    {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}}};
  std::ofstream(dir + "/tokenizer.json") << tok.dump();
}

}  // namespace llmserve::testing
