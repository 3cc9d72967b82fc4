// Reasoning output: a thinking model's <think>...</think> block split from its reply, as vLLM's
// `--reasoning-parser` and DeepSeek's API return it (`reasoning_content`, and vLLM's newer name
// `reasoning`). Parsers, by vLLM's names:
//   qwen3        the block is reasoning when the reply opens with <think> or the prompt ends
//                inside an open one (a generation prompt that writes "<think>\n", as Qwen3's
//                thinking models and DeepSeek-R1's templates do); else the reply is all content
//                (enable_thinking: false closes the block in the prompt).
//   deepseek_r1  the reply is reasoning up to </think> (a leading <think> dropped), whether or
//                not it opened the block.
//   auto         qwen3 when the chat template writes <think> or </think>, else none.
// A block never closed (the reply cut short) is all reasoning. Reasoning is trimmed of the
// whitespace at its ends, content of the whitespace after </think>; a reply without reasoning
// is content byte for byte.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "engine/core/status.h"
#include "engine/grammar/grammar_spec.h"
#include "engine/reasoning/reasoning_budget.h"

namespace llmserve {

enum class ReasoningParser { kAuto, kNone, kDeepSeekR1, kQwen3 };

// "auto", "none", "deepseek_r1", "qwen3"; nullopt for anything else.
std::optional<ReasoningParser> reasoning_parser_from_name(std::string_view name);
const char* reasoning_parser_name(ReasoningParser parser);

// Whether a chat template writes think tags (a thinking model's template).
bool template_writes_think(std::string_view template_source);

// kAuto resolved against the model's template; the others as they are.
ReasoningParser resolve_reasoning_parser(ReasoningParser configured,
                                         std::string_view template_source);

// Where one reply starts. kOff: no parsing (all content).
enum class ReasoningStart { kOff, kInReasoning, kMayOpen };

// For a reply to `prompt` (the rendered chat) under the resolved `parser`. A reply that a
// grammar constrains from its first token starts kMayOpen under deepseek_r1 unless the grammar
// makes room for the block (reasoning_grammar).
ReasoningStart reasoning_start(ReasoningParser parser, std::string_view prompt,
                               bool grammar_without_block);

// A grammar that lets the reasoning block come first and then holds the reply to `inner`:
// kInReasoning: reasoning text up to </think>; kMayOpen: an optional <think>...</think> block.
// Whitespace may follow </think>. An xgrammar structural tag (GrammarKind::kStructuralTag) with
// inner's `field`; INVALID_ARGUMENT naming the field when inner's JSON text does not parse.
Result<GrammarSpec> reasoning_grammar(const GrammarSpec& inner, ReasoningStart start);

// The engine's reasoning budget for a reply that starts at `start`: at most `max_tokens` tokens
// inside the <think> section (kInReasoning: opened by the prompt), then </think> is forced.
// Inactive when start is kOff (the model has no reasoning section) or max_tokens < 0.
ReasoningBudget reasoning_budget(ReasoningStart start, int32_t max_tokens);

// One reply's split, as far as it is known.
struct ReasoningPieces {
  std::string reasoning;
  std::string content;
};

// Splits a reply fed in pieces (stream deltas, split anywhere, tags included). Text that may
// still turn out to be a tag or trimmed whitespace is held until the next feed or finish.
class ReasoningSplitter {
 public:
  explicit ReasoningSplitter(ReasoningStart start);

  ReasoningPieces feed(std::string_view text);
  ReasoningPieces finish();  // the held text; call once, at the end of the reply

  // The reply had a reasoning block (empty or not).
  bool opened() const { return opened_; }

 private:
  enum class State { kOff, kMayOpen, kReasoning, kContentStart, kContent };
  void run(ReasoningPieces& out, bool at_end);
  void emit_reasoning(std::string_view text, bool trim_end, ReasoningPieces& out);

  State state_;
  bool opened_ = false;
  bool drop_open_ = false;          // the prompt opened the block: a leading <think> is dropped
  bool reasoning_started_ = false;  // non-whitespace reasoning was given out
  std::string held_;
};

// The whole reply at once.
ReasoningPieces split_reasoning(std::string_view text, ReasoningStart start,
                                bool* opened = nullptr);

}  // namespace llmserve
