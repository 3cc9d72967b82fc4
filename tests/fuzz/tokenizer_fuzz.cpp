// Tokenizer: encode arbitrary bytes and decode arbitrary ids. Tokenizers are loaded once: the
// byte-level (HF tokenizer.json) and SentencePiece (GGUF) fixtures, plus the default model's vocab
// when LLMSERVE_TEST_MODEL names it. Input: byte 0 picks the tokenizer and flags; the rest is the
// text to encode and, read as little-endian int32s, the ids to decode.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/load_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

uint64_t g_sink = 0;  // keeps results observable

std::vector<std::unique_ptr<llmserve::Tokenizer>> load_all() {
  std::vector<std::unique_ptr<llmserve::Tokenizer>> out;
  std::vector<std::string> paths = {std::string(LLMSERVE_FIXTURES_DIR) + "/tokenizer/bytelevel",
                                    std::string(LLMSERVE_FIXTURES_DIR) +
                                        "/tokenizer/spm/tokenizer.gguf"};
  if (const char* m = std::getenv("LLMSERVE_TEST_MODEL"); m != nullptr && *m != '\0') {
    paths.emplace_back(m);
  }
  for (const auto& p : paths) {
    auto tok = llmserve::load_tokenizer(p);
    if (tok.is_ok()) out.push_back(std::move(*tok));
  }
  if (out.empty()) std::abort();  // fixtures missing: the harness is broken, not the input
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto tokenizers = load_all();
  if (size == 0) return 0;
  const uint8_t sel = data[0];
  const auto& tok = *tokenizers[sel % tokenizers.size()];
  const bool add_special = (sel & 0x10) != 0, parse_special = (sel & 0x20) != 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  auto ids = tok.encode(text, add_special, parse_special);
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.vocab_size()) std::abort();  // encode must give in-vocab ids
  }
  g_sink += tok.decode(ids, (sel & 0x40) != 0).size();

  std::vector<int32_t> raw((size - 1) / 4);
  if (!raw.empty()) std::memcpy(raw.data(), data + 1, raw.size() * 4);
  g_sink += tok.decode(raw, false).size() + tok.decode(raw, true).size();
  for (size_t i = 0; i < raw.size() && i < 16; ++i) {
    g_sink += tok.token_bytes(raw[i]).size() + tok.token_text(raw[i]).size() +
              tok.is_special(raw[i]);
  }
  return 0;
}
