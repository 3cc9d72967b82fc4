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

struct MatchDataDeleter {
  void operator()(pcre2_match_data* md) const { pcre2_match_data_free(md); }
};
struct JitStackDeleter {
  void operator()(pcre2_jit_stack* s) const { pcre2_jit_stack_free(s); }
};
struct MatchContextDeleter {
  void operator()(pcre2_match_context* c) const { pcre2_match_context_free(c); }
};

// Splits one piece with one regex, handing matches and gaps to emit; false when emit stopped.
template <class Emit>
bool split_one(pcre2_code* code, pcre2_match_data* md, pcre2_match_context* mctx,
               std::string_view text, const Emit& emit) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  size_t emitted = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, mctx);
    if (rc < 0) break;  // no more matches (or a match error: the rest stays one piece)
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t start = ov[0], end = ov[1];
    if (start > emitted && !emit(text.substr(emitted, start - emitted))) return false;
    if (end > start) {
      if (!emit(text.substr(start, end - start))) return false;
      emitted = end;
      pos = end;
    } else {
      // Empty match: step over one code point.
      pos = end + 1;
      while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
    }
  }
  if (emitted < text.size()) return emit(text.substr(emitted));
  return true;
}

// One split call's PCRE2 scratch: a JIT stack and one match block per regex stage.
struct SplitScratch {
  std::unique_ptr<pcre2_jit_stack, JitStackDeleter> stack;
  std::unique_ptr<pcre2_match_context, MatchContextDeleter> mctx;
  std::vector<std::unique_ptr<pcre2_match_data, MatchDataDeleter>> md;
};

// Stage `i` splits `text`; each piece goes through the later stages, and the last stage's
// pieces to `piece`.
bool split_stage(const std::vector<pcre2_code*>& codes, SplitScratch& s, size_t i,
                 std::string_view text, const PreTokenizer::PieceFn& piece) {
  if (i == codes.size()) return piece(text);
  return split_one(codes[i], s.md[i].get(), s.mctx.get(), text,
                   [&](std::string_view sub) { return split_stage(codes, s, i + 1, sub, piece); });
}

}  // namespace

bool PreTokenizer::split(std::string_view text, const PieceFn& piece) const {
  if (text.empty()) return true;
  if (impl_->codes.empty()) return piece(text);
  SplitScratch s;
  s.stack.reset(pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr));
  s.mctx.reset(pcre2_match_context_create(nullptr));
  if (s.stack && s.mctx) pcre2_jit_stack_assign(s.mctx.get(), nullptr, s.stack.get());
  std::vector<pcre2_code*> codes;
  for (const auto& c : impl_->codes) {
    codes.push_back(c.get());
    s.md.emplace_back(pcre2_match_data_create_from_pattern(c.get(), nullptr));
  }
  return split_stage(codes, s, 0, text, piece);
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  split(text, [&out](std::string_view p) {
    out.push_back(p);
    return true;
  });
}

}  // namespace llmserve
