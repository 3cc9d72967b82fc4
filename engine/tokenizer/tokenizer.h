// Tokenizer: text <-> token ids for byte-level BPE (GPT-2 / Llama-3 / Qwen2 / SmolLM),
// SentencePiece-style BPE (Llama-2 / Mistral: "▁" spaces, <0xNN> byte fallback) and WordPiece
// (BERT: engine/tokenizer/wordpiece_tokenizer.h).
// Built from a TokenizerSpec, which the GGUF metadata or an HF tokenizer.json fills.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/status.h"

namespace llmserve {

enum class TokenizerKind { kByteLevelBpe, kSentencePieceBpe, kWordPiece };

// GGUF token types (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};

struct TokenizerSpec {
  TokenizerKind kind = TokenizerKind::kByteLevelBpe;
  std::vector<std::string> tokens;     // vocab strings as stored (byte-mapped / "▁" form)
  std::vector<float> scores;           // SentencePiece scores; may be empty
  std::vector<TokenType> token_types;  // one per token; empty = all normal
  std::vector<std::pair<std::string, std::string>> merges;  // by rank (byte-level BPE)
  std::string pre;  // pre-tokenizer name (GGUF tokenizer.ggml.pre)
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;
  std::vector<int32_t> stop_ids;  // ids that end generation (eos plus e.g. <|im_end|>)
  bool add_bos = false, add_eos = false;
  bool add_space_prefix = true;  // SentencePiece: prepend "▁" to the text
  // SentencePiece, HF Metaspace(prepend_scheme "first"): "▁" only before the text at offset 0,
  // and not when it already starts with "▁". Otherwise (legacy Llama-2 / llama.cpp) "▁" goes
  // before every text fragment between special tokens.
  bool space_prefix_first_only = false;
  bool ignore_merges = false;  // byte-level: a piece that is a token is used whole
  // Byte-level: explicit pre-tokenizer regex sequence (from an HF Split); overrides `pre`.
  std::vector<std::string> pre_patterns;
  std::string chat_template;  // Jinja source; empty when the model has none
  // WordPiece (kWordPiece): tokens are stored as HF has them (a word's continuation pieces
  // start with `prefix`); bos_id is [CLS], eos_id [SEP], put around the text when add_bos /
  // add_eos. HF's BertNormalizer settings: drop control characters and map whitespace to ' '
  // (clean_text), space out CJK ideographs (chinese_chars), NFD then drop non-spacing marks
  // (strip_accents), lowercase; a word longer than max_chars_per_word characters is [UNK].
  struct WordPiece {
    bool clean_text = true, chinese_chars = true, strip_accents = true, lowercase = true;
    std::string prefix = "##";
    int64_t max_chars_per_word = 100;
  } wordpiece;
};

// What Tokenizer::encode_limited returns.
struct LimitedEncoding {
  // over_limit false: every id of encode(). true: a prefix of encode()'s ids, at most
  // max_tokens + 1 of them (fewer when a long piece was judged over by a lower bound on its
  // token count, without merging it).
  std::vector<int32_t> ids;
  bool over_limit = false;  // encode() would give more than max_tokens ids
};

class GgufFile;
Result<TokenizerSpec> tokenizer_spec_from_gguf(const GgufFile& gguf);
// dir holds tokenizer.json and optionally tokenizer_config.json (chat template, special tokens).
Result<TokenizerSpec> tokenizer_spec_from_hf_dir(const std::string& dir);
// WordPiece specs (wordpiece_spec.cpp): a GGUF of tokenizer.ggml.model "bert" (llama.cpp's
// "phantom space" tokens: a word-start token carries a leading U+2581, a continuation none), and
// a bare vocab.txt (one token per line) with tokenizer_config.json's do_lower_case; an HF
// tokenizer.json whose model is WordPiece: engine/tokenizer/wordpiece_spec.h.
Result<TokenizerSpec> wordpiece_spec_from_gguf(const GgufFile& gguf);
Result<TokenizerSpec> wordpiece_spec_from_vocab_txt(const std::string& dir);

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> create(TokenizerSpec spec);
  virtual ~Tokenizer() = default;

  // add_special: prepend BOS / append EOS per the spec. parse_special: text like "<|im_start|>"
  // becomes the special token instead of being split as plain text.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special = true,
                                      bool parse_special = true) const = 0;
  // encode() that gives up once the ids (BOS / EOS included) would number more than max_tokens:
  // for a prompt that must fit a context, its cost stays bounded by the limit, not the text.
  // This default encodes everything, then compares.
  virtual LimitedEncoding encode_limited(std::string_view text, size_t max_tokens,
                                         bool add_special = true, bool parse_special = true) const;
  // Byte-exact decode of a sequence (may contain invalid UTF-8 if the ids split a character).
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special = false) const = 0;
  // The raw bytes one token stands for, as it would appear in the middle of a sequence
  // (no SentencePiece leading-space stripping). Out-of-range ids give an empty string.
  virtual std::string token_bytes(int32_t id) const = 0;
  // The vocab string as stored (for logprob / tokenize responses).
  virtual const std::string& token_text(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual const TokenizerSpec& spec() const = 0;
};

}  // namespace llmserve
