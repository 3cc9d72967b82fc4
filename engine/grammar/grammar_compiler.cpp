#include "engine/grammar/grammar_compiler.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/grammar/token_bitmask.h"
#include "engine/grammar/xgrammar_impl.h"
#include "engine/tokenizer/utf8.h"

namespace llmserve {
namespace {

using Clock = std::chrono::steady_clock;

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

bool same_spec(const GrammarSpec& a, const GrammarSpec& b) {
  return a.kind == b.kind && a.text == b.text && a.choices == b.choices &&
         a.max_repeats == b.max_repeats;
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

}  // namespace

std::string choice_grammar_ebnf(const std::vector<std::string>& choices) {
  std::string out = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += " | ";
    out += choices[i].empty() ? "\"\"" : ebnf_literal(choices[i]);
  }
  return out;
}

struct GrammarCompiler::State {
  const Tokenizer& tokenizer;
  int32_t vocab_size;
  GrammarCompilerOptions options;

  std::once_flag info_once;
  std::optional<xgrammar::GrammarCompiler> compiler;  // built on first use, on a pool thread
  DeniedTokens control_tokens;                        // JSON kinds deny them
  DeniedTokens tagged_tokens;  // tagged JSON: the same but newlines (its tags have them)

  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs;
  bool stopping = false;
  std::vector<std::thread> threads;

  struct Entry {
    GrammarSpec spec;
    GrammarFuture future;
    std::list<uint64_t>::iterator lru;
  };
  std::unordered_map<uint64_t, Entry> cache;
  std::list<uint64_t> lru;  // most recent first
  GrammarCompilerStats stats;

  State(const Tokenizer& t, int32_t v, GrammarCompilerOptions o)
      : tokenizer(t), vocab_size(v), options(o) {}

  void worker() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stopping || !jobs.empty(); });
        if (jobs.empty()) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      job();
    }
  }

  xgrammar::GrammarCompiler& xg() {
    std::call_once(info_once, [&] {
      const int32_t n = tokenizer.vocab_size();
      std::vector<std::string> vocab(static_cast<size_t>(std::min(n, vocab_size)));
      for (int32_t id = 0; id < static_cast<int32_t>(vocab.size()); ++id) {
        // Control tokens are "" (xgrammar's special tokens: never inside the text).
        if (!tokenizer.is_special(id)) vocab[static_cast<size_t>(id)] = tokenizer.token_bytes(id);
      }
      std::vector<int32_t> stops;
      for (int32_t id : tokenizer.spec().stop_ids) {
        if (id >= 0 && id < static_cast<int32_t>(vocab.size())) stops.push_back(id);
      }
      const auto words = static_cast<size_t>(token_bitmask_words(vocab_size));
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
      control_tokens = std::move(json_denied);
      tagged_tokens = std::move(tagged_denied);
      xgrammar::TokenizerInfo info(vocab, xgrammar::VocabType::RAW, vocab_size, stops);
      compiler.emplace(info, std::max(options.threads, 1), /*cache_enabled=*/false);
    });
    return *compiler;
  }

  Result<CompiledGrammarPtr> run(const GrammarSpec& spec) {
    try {
      xgrammar::GrammarCompiler& c = xg();
      std::optional<xgrammar::CompiledGrammar> compiled;
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
          if (spec.choices.empty()) return invalid_argument("choice: needs at least one choice");
          compiled = c.CompileGrammar(choice_grammar_ebnf(spec.choices), "root");
          break;
        case GrammarKind::kEbnf:
          compiled = c.CompileGrammar(spec.text, "root");
          break;
        case GrammarKind::kTaggedJson:
          if (spec.choices.size() != 2 || spec.max_repeats < 1 || spec.max_repeats > 16) {
            return invalid_argument("tagged_json: needs {begin, end} tags and 1..16 repeats");
          }
          compiled = c.CompileGrammar(tagged_json_grammar(spec));
          break;
      }
      const bool json =
          spec.kind == GrammarKind::kJsonObject || spec.kind == GrammarKind::kJsonSchema;
      const DeniedTokens denied = json                                    ? control_tokens
                                  : spec.kind == GrammarKind::kTaggedJson ? tagged_tokens
                                                                          : nullptr;
      auto impl = std::make_shared<CompiledGrammar::Impl>(
          CompiledGrammar::Impl{std::move(*compiled), vocab_size, denied});
      return std::make_shared<const CompiledGrammar>(std::move(impl), spec);
    } catch (const std::exception& e) {
      std::string what = e.what();
      // xgrammar's messages start "[hh:mm:ss] /path/file.cc:line: ": keep what follows.
      if (what.starts_with("[")) {
        const size_t src = what.find(".cc:");
        const size_t colon = src == std::string::npos ? src : what.find(": ", src);
        if (colon != std::string::npos) what = what.substr(colon + 2);
      }
      while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
      if (what.size() > 1000) what = what.substr(0, 1000) + "...";
      return invalid_argument(std::string("cannot compile the ") + grammar_kind_name(spec.kind) +
                              ": " + what);
    }
  }
};

GrammarCompiler::GrammarCompiler(const Tokenizer& tokenizer, int32_t vocab_size,
                                 GrammarCompilerOptions options)
    : state_(std::make_unique<State>(tokenizer, vocab_size, options)) {
  const int32_t n = std::max(options.threads, 1);
  for (int32_t i = 0; i < n; ++i) state_->threads.emplace_back([s = state_.get()] { s->worker(); });
}

GrammarCompiler::~GrammarCompiler() {
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  for (auto& t : state_->threads) t.join();
}

GrammarFuture GrammarCompiler::compile(const GrammarSpec& spec) {
  State& s = *state_;
  const uint64_t key = spec.key();
  std::lock_guard lock(s.mu);
  auto it = s.cache.find(key);
  if (it != s.cache.end() && same_spec(it->second.spec, spec)) {
    s.lru.splice(s.lru.begin(), s.lru, it->second.lru);
    ++s.stats.cache_hits;
    return it->second.future;
  }
  if (it != s.cache.end()) {  // a hash collision: the newer spec takes the slot
    s.lru.erase(it->second.lru);
    s.cache.erase(it);
  }
  auto promise = std::make_shared<std::promise<Result<CompiledGrammarPtr>>>();
  GrammarFuture future = promise->get_future().share();
  s.lru.push_front(key);
  s.cache.emplace(key, State::Entry{spec, future, s.lru.begin()});
  while (static_cast<int64_t>(s.cache.size()) > std::max(s.options.cache_entries, 1)) {
    s.cache.erase(s.lru.back());  // a waiter keeps its own future
    s.lru.pop_back();
  }
  s.stats.cached = static_cast<int64_t>(s.cache.size());
  s.jobs.push_back([&s, spec, promise] {
    const auto start = Clock::now();
    Result<CompiledGrammarPtr> r = s.run(spec);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    {
      std::lock_guard l(s.mu);
      ++s.stats.compiled;
      s.stats.failed += r.is_ok() ? 0 : 1;
      s.stats.compile_seconds += seconds;
    }
    promise->set_value(std::move(r));
  });
  s.cv.notify_one();
  return future;
}

Result<CompiledGrammarPtr> GrammarCompiler::compile_and_wait(const GrammarSpec& spec,
                                                             Clock::time_point deadline) {
  GrammarFuture f = compile(spec);
  if (f.wait_until(deadline) != std::future_status::ready) {
    return Status(StatusCode::kDeadlineExceeded,
                  spec.field + ": the grammar did not compile before the deadline");
  }
  const Result<CompiledGrammarPtr>& r = f.get();
  if (!r.is_ok()) return Status(r.status().code(), spec.field + ": " + r.status().message());
  return *r;
}

GrammarCompilerStats GrammarCompiler::stats() const {
  std::lock_guard lock(state_->mu);
  return state_->stats;
}

}  // namespace llmserve
