// tokenizer_spec_from_gguf: the tokenizer.ggml.* metadata of a GGUF file.
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/stop_tokens.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {
namespace {

int32_t id_or(const GgufFile& g, std::string_view key, int32_t fallback) {
  const auto v = g.get_i64(key);
  return v && *v >= 0 && *v <= INT32_MAX ? static_cast<int32_t>(*v) : fallback;
}

}  // namespace

Result<TokenizerSpec> tokenizer_spec_from_gguf(const GgufFile& gguf) {
  TokenizerSpec spec;
  const auto model = gguf.get_string("tokenizer.ggml.model");
  if (!model) return data_loss("GGUF has no tokenizer.ggml.model");
  if (*model == "bert") return wordpiece_spec_from_gguf(gguf);
  if (*model == "gpt2") {
    spec.kind = TokenizerKind::kByteLevelBpe;
  } else if (*model == "llama") {
    spec.kind = TokenizerKind::kSentencePieceBpe;
  } else {
    return unimplemented("GGUF tokenizer model '" + std::string(*model) +
                         "' is not supported (gpt2, llama, bert)");
  }
  const bool spm = spec.kind == TokenizerKind::kSentencePieceBpe;

  const auto tokens = gguf.get_string_array("tokenizer.ggml.tokens");
  if (!tokens || tokens->empty())
    return data_loss("GGUF tokenizer.ggml.tokens is missing or empty");
  spec.tokens.assign(tokens->begin(), tokens->end());
  const size_t n = spec.tokens.size();

  if (gguf.find("tokenizer.ggml.token_type") != nullptr) {
    const auto types = gguf.get_i32_array("tokenizer.ggml.token_type");
    if (!types || types->size() != n) {
      return data_loss("GGUF tokenizer.ggml.token_type is not one integer per token");
    }
    spec.token_types.reserve(n);
    for (int32_t t : *types) {
      spec.token_types.push_back(t >= 1 && t <= 6 ? static_cast<TokenType>(t) : TokenType::kNormal);
    }
  }
  if (gguf.find("tokenizer.ggml.scores") != nullptr) {
    auto scores = gguf.get_f32_array("tokenizer.ggml.scores");
    if (!scores || scores->size() != n) {
      return data_loss("GGUF tokenizer.ggml.scores is not one number per token");
    }
    spec.scores = std::move(*scores);
  }
  if (gguf.find("tokenizer.ggml.merges") != nullptr) {
    const auto merges = gguf.get_string_array("tokenizer.ggml.merges");
    if (!merges) return data_loss("GGUF tokenizer.ggml.merges is not an array of strings");
    spec.merges.reserve(merges->size());
    for (size_t i = 0; i < merges->size(); ++i) {
      const std::string_view m = (*merges)[i];
      const size_t space = m.find(' ', 1);
      if (space == std::string_view::npos) {
        return data_loss("GGUF merge " + std::to_string(i) + " has no space: '" + std::string(m) +
                         "'");
      }
      spec.merges.emplace_back(std::string(m.substr(0, space)), std::string(m.substr(space + 1)));
    }
  }
  if (spm && spec.merges.empty() && spec.scores.empty()) {
    return data_loss("GGUF SentencePiece tokenizer has neither scores nor merges");
  }
  spec.pre = std::string(gguf.get_string("tokenizer.ggml.pre").value_or(spm ? "" : "default"));
  spec.ignore_merges = spec.pre == "llama-bpe";
  spec.bos_id = id_or(gguf, "tokenizer.ggml.bos_token_id", -1);
  spec.eos_id = id_or(gguf, "tokenizer.ggml.eos_token_id", -1);
  spec.unk_id = id_or(gguf, "tokenizer.ggml.unknown_token_id", -1);
  spec.pad_id = id_or(gguf, "tokenizer.ggml.padding_token_id", -1);
  for (int32_t* id : {&spec.bos_id, &spec.eos_id, &spec.unk_id, &spec.pad_id}) {
    if (*id >= static_cast<int32_t>(n)) *id = -1;
  }
  spec.add_bos = gguf.get_bool("tokenizer.ggml.add_bos_token").value_or(spm);
  spec.add_eos = gguf.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  spec.add_space_prefix = gguf.get_bool("tokenizer.ggml.add_space_prefix").value_or(spm);
  spec.chat_template = std::string(gguf.get_string("tokenizer.chat_template").value_or(""));
  fill_stop_ids(spec);
  return spec;
}

}  // namespace llmserve
