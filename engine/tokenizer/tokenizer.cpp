#include "engine/tokenizer/tokenizer.h"

#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/wordpiece_tokenizer.h"

namespace llmserve {

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(TokenizerSpec spec) {
  if (spec.kind == TokenizerKind::kWordPiece) return WordPieceTokenizer::build(std::move(spec));
  return BpeTokenizer::build(std::move(spec));
}

LimitedEncoding Tokenizer::encode_limited(std::string_view text, size_t max_tokens,
                                          bool add_special, bool parse_special) const {
  LimitedEncoding e;
  e.ids = encode(text, add_special, parse_special);
  e.over_limit = e.ids.size() > max_tokens;
  if (e.over_limit) e.ids.resize(max_tokens + 1);
  return e;
}

}  // namespace llmserve
