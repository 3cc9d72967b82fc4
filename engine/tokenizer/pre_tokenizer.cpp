#define PCRE2_CODE_UNIT_WIDTH 8
#include "engine/tokenizer/pre_tokenizer.h"

#include <pcre2.h>

namespace llmserve {
namespace {

constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kSingleDigit = R"(\p{N})";

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};

}  // namespace

struct PreTokenizer::Impl {
  std::vector<std::unique_ptr<pcre2_code, CodeDeleter>> codes;
};

PreTokenizer::~PreTokenizer() = default;

Result<std::vector<std::string>> PreTokenizer::patterns_for(std::string_view name) {
  if (name.empty() || name == "default" || name == "gpt2" || name == "gpt-2") {
    return std::vector<std::string>{kGpt2};
  }
  if (name == "smollm") return std::vector<std::string>{kSingleDigit, kGpt2};
  if (name == "llama-bpe" || name == "llama3" || name == "llama-v3") {
    return std::vector<std::string>{kLlama3};
  }
  if (name == "qwen2") return std::vector<std::string>{kQwen2};
  return unimplemented("tokenizer pre-tokenizer '" + std::string(name) +
                       "' is not supported (known: gpt2, smollm, llama-bpe, qwen2)");
}

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(
    const std::vector<std::string>& patterns) {
  std::unique_ptr<PreTokenizer> pre(new PreTokenizer());
  pre->impl_ = std::make_unique<Impl>();
  for (const std::string& pattern : patterns) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return invalid_argument("pre-tokenizer regex does not compile at offset " +
                              std::to_string(err_offset) + ": " +
                              reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
    pre->impl_->codes.emplace_back(code);
  }
  return pre;
}

namespace {

// Splits one piece with one regex, appending matches and gaps to out.
void split_one(pcre2_code* code, pcre2_match_data* md, pcre2_match_context* mctx,
               std::string_view text, std::vector<std::string_view>& out) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  size_t emitted = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, mctx);
    if (rc < 0) break;  // no more matches (or a match error: the rest stays one piece)
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t start = ov[0], end = ov[1];
    if (start > emitted) out.push_back(text.substr(emitted, start - emitted));
    if (end > start) {
      out.push_back(text.substr(start, end - start));
      emitted = end;
      pos = end;
    } else {
      // Empty match: step over one code point.
      pos = end + 1;
      while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
    }
  }
  if (emitted < text.size()) out.push_back(text.substr(emitted));
}

}  // namespace

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  if (impl_->codes.empty()) {
    out.push_back(text);
    return;
  }
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
  pcre2_match_context* mctx = pcre2_match_context_create(nullptr);
  if (stack != nullptr && mctx != nullptr) pcre2_jit_stack_assign(mctx, nullptr, stack);
  std::vector<std::string_view> current{text};
  std::vector<std::string_view> next;
  for (size_t i = 0; i < impl_->codes.size(); ++i) {
    pcre2_code* code = impl_->codes[i].get();
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
    std::vector<std::string_view>& dst = (i + 1 == impl_->codes.size()) ? out : next;
    for (std::string_view piece : current) split_one(code, md, mctx, piece, dst);
    pcre2_match_data_free(md);
    if (&dst == &next) {
      current.swap(next);
      next.clear();
    }
  }
  pcre2_match_context_free(mctx);
  pcre2_jit_stack_free(stack);
}

}  // namespace llmserve
