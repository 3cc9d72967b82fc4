#include "engine/tokenizer/tokenizer.h"

#include "engine/tokenizer/bpe_tokenizer.h"

namespace llmserve {

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(TokenizerSpec spec) {
  return BpeTokenizer::build(std::move(spec));
}

}  // namespace llmserve
