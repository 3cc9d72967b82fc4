#include "engine/grammar/grammar_build.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "engine/grammar/grammar_compiler.h"
#include "engine/grammar/token_bitmask.h"
#include "engine/grammar/xgrammar_impl.h"
#include "engine/tokenizer/utf8.h"

namespace llmserve {
namespace {

constexpr char kReplyGrammar = 'G';
constexpr char kReplyError = 'E';

std::string ebnf_literal(const std::string& s) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// 1..max_repeats schema values, each between the tags, "\n" between them.
xgrammar::Grammar tagged_json_grammar(const GrammarSpec& spec) {
  auto literal = [](const std::string& s) {
    return xgrammar::Grammar::FromEBNF("root ::= " + ebnf_literal(s));
  };
  const xgrammar::Grammar one = xgrammar::Grammar::Concat(
      {literal(spec.choices.at(0)),
       xgrammar::Grammar::FromJSONSchema(spec.text, /*any_whitespace=*/false),
       literal(spec.choices.at(1))});
  const xgrammar::Grammar next = xgrammar::Grammar::Concat({literal("\n"), one});
  std::vector<xgrammar::Grammar> options;
  std::vector<xgrammar::Grammar> seq = {one};
  for (int32_t k = 1; k <= std::max(spec.max_repeats, 1); ++k) {
    options.push_back(k == 1 ? one : xgrammar::Grammar::Concat(seq));
    seq.push_back(next);
  }
  return options.size() == 1 ? options[0] : xgrammar::Grammar::Union(options);
}

// xgrammar's messages start "[hh:mm:ss] /path/file.cc:line: ": keep what follows.
std::string xgrammar_message(std::string what) {
  if (what.starts_with("[")) {
    const size_t src = what.find(".cc:");
    const size_t colon = src == std::string::npos ? src : what.find(": ", src);
    if (colon != std::string::npos) what = what.substr(colon + 2);
  }
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
  if (what.size() > 1000) what = what.substr(0, 1000) + "...";
  return what;
}

std::string mib(int64_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

}  // namespace

std::string choice_grammar_ebnf(const std::vector<std::string>& choices) {
  std::string out = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += " | ";
    out += choices[i].empty() ? "\"\"" : ebnf_literal(choices[i]);
  }
  return out;
}

Status grammar_error(const GrammarSpec& spec, const std::string& why) {
  return invalid_argument(std::string("cannot compile the ") + grammar_kind_name(spec.kind) + ": " +
                          why);
}

struct GrammarBuild::Tables {
  std::optional<xgrammar::TokenizerInfo> info;
  std::optional<xgrammar::GrammarCompiler> compiler;
  DeniedTokens control_tokens;  // JSON kinds deny them
  DeniedTokens tagged_tokens;   // tagged JSON: the same but newlines (its tags have them)

  DeniedTokens denied_for(GrammarKind kind) const {
    if (kind == GrammarKind::kJsonObject || kind == GrammarKind::kJsonSchema) return control_tokens;
    return kind == GrammarKind::kTaggedJson ? tagged_tokens : nullptr;
  }
};

GrammarBuild::GrammarBuild(const Tokenizer& tokenizer, int32_t vocab_size)
    : tokenizer_(tokenizer), vocab_size_(vocab_size) {}

GrammarBuild::~GrammarBuild() = default;

void GrammarBuild::prepare() {
  std::call_once(once_, [&] {
    auto t = std::make_unique<Tables>();
    const int32_t n = tokenizer_.vocab_size();
    std::vector<std::string> vocab(static_cast<size_t>(std::min(n, vocab_size_)));
    for (int32_t id = 0; id < static_cast<int32_t>(vocab.size()); ++id) {
      // Control tokens are "" (xgrammar's special tokens: never inside the text).
      if (!tokenizer_.is_special(id)) vocab[static_cast<size_t>(id)] = tokenizer_.token_bytes(id);
    }
    std::vector<int32_t> stops;
    for (int32_t id : tokenizer_.spec().stop_ids) {
      if (id >= 0 && id < static_cast<int32_t>(vocab.size())) stops.push_back(id);
    }
    const auto words = static_cast<size_t>(token_bitmask_words(vocab_size_));
    auto json_denied = std::make_shared<std::vector<uint32_t>>(words, 0u);
    auto tagged_denied = std::make_shared<std::vector<uint32_t>>(words, 0u);
    for (size_t id = 0; id < vocab.size(); ++id) {
      const bool piece = !utf8_is_valid(vocab[id]);  // a piece of a character
      bool control = false, control_but_newline = false;
      for (unsigned char ch : vocab[id]) {
        control = control || ch < 0x20;
        control_but_newline = control_but_newline || (ch < 0x20 && ch != '\n');
      }
      if (piece || control) (*json_denied)[id / 32] |= 1u << (id % 32);
      if (piece || control_but_newline) (*tagged_denied)[id / 32] |= 1u << (id % 32);
    }
    t->control_tokens = std::move(json_denied);
    t->tagged_tokens = std::move(tagged_denied);
    t->info.emplace(vocab, xgrammar::VocabType::RAW, vocab_size_, stops);
    // One thread: a compile child starts none (a forked process may not, under some sanitizers);
    // compiles run in parallel as separate children instead.
    t->compiler.emplace(*t->info, /*max_threads=*/1, /*cache_enabled=*/false);
    tables_ = std::move(t);
  });
}

std::string GrammarBuild::compile_reply(const GrammarSpec& spec, int64_t max_bytes) {
  prepare();
  xgrammar::GrammarCompiler& c = *tables_->compiler;
  std::optional<xgrammar::CompiledGrammar> compiled;
  try {
    switch (spec.kind) {
      case GrammarKind::kJsonObject:
        compiled = c.CompileJSONSchema(R"({"type": "object"})", /*any_whitespace=*/false);
        break;
      case GrammarKind::kJsonSchema:
        compiled = c.CompileJSONSchema(spec.text, /*any_whitespace=*/false);
        break;
      case GrammarKind::kRegex:
        compiled = c.CompileRegex(spec.text);
        break;
      case GrammarKind::kChoice:
        compiled = c.CompileGrammar(choice_grammar_ebnf(spec.choices), "root");
        break;
      case GrammarKind::kEbnf:
        compiled = c.CompileGrammar(spec.text, "root");
        break;
      case GrammarKind::kTaggedJson:
        compiled = c.CompileGrammar(tagged_json_grammar(spec));
        break;
      case GrammarKind::kStructuralTag:
        compiled = c.CompileStructuralTag(spec.text);
        break;
    }
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    return kReplyError + xgrammar_message(e.what());
  }
  const auto bytes = static_cast<int64_t>(compiled->MemorySizeBytes());
  if (max_bytes > 0 && bytes > max_bytes) {
    return kReplyError + ("the compiled grammar needs " + mib(bytes) + ", more than the " +
                          mib(max_bytes) + " one grammar may use (engine.grammar_max_bytes)");
  }
  const CompiledGrammar probe(std::make_shared<CompiledGrammar::Impl>(CompiledGrammar::Impl{
                                  *compiled, vocab_size_, tables_->denied_for(spec.kind)}),
                              spec);
  TokenMatcher matcher = probe.make_matcher();
  std::vector<uint32_t> mask(static_cast<size_t>(token_bitmask_words(vocab_size_)));
  matcher.fill_next_token_mask(mask);
  if (std::all_of(mask.begin(), mask.end(), [](uint32_t w) { return w == 0; })) {
    return kReplyError + std::string("the grammar allows no output: no token can begin it");
  }
  return kReplyGrammar + compiled->SerializeJSON();
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarBuild::read_reply(const GrammarSpec& spec,
                                                                        const std::string& reply) {
  if (reply.empty()) return internal_error("the grammar compile process replied nothing");
  if (reply[0] == kReplyError) return grammar_error(spec, reply.substr(1));
  prepare();
  auto compiled = xgrammar::CompiledGrammar::DeserializeJSON(reply.substr(1), *tables_->info);
  if (std::holds_alternative<xgrammar::SerializationError>(compiled)) {
    return internal_error("cannot read a compiled grammar back from its compile process");
  }
  auto impl = std::make_shared<CompiledGrammar::Impl>(
      CompiledGrammar::Impl{std::move(std::get<xgrammar::CompiledGrammar>(compiled)), vocab_size_,
                            tables_->denied_for(spec.kind)});
  return std::make_shared<const CompiledGrammar>(std::move(impl), spec);
}

}  // namespace llmserve
