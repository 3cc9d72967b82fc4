#include "server/common/reasoning_parser.h"

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar_compiler.h"

namespace llmserve {

namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
constexpr std::string_view kSpace = " \t\n\r";

bool is_space(char c) {
  return kSpace.find(c) != std::string_view::npos;
}

// The length of the longest proper prefix of `tag` that `text` ends with.
size_t partial_tag_at_end(std::string_view text, std::string_view tag) {
  for (size_t len = std::min(tag.size() - 1, text.size()); len > 0; --len) {
    if (text.substr(text.size() - len) == tag.substr(0, len)) return len;
  }
  return 0;
}

}  // namespace

std::optional<ReasoningParser> reasoning_parser_from_name(std::string_view name) {
  if (name == "auto") return ReasoningParser::kAuto;
  if (name == "none") return ReasoningParser::kNone;
  if (name == "deepseek_r1") return ReasoningParser::kDeepSeekR1;
  if (name == "qwen3") return ReasoningParser::kQwen3;
  return std::nullopt;
}

const char* reasoning_parser_name(ReasoningParser parser) {
  switch (parser) {
    case ReasoningParser::kAuto:
      return "auto";
    case ReasoningParser::kNone:
      return "none";
    case ReasoningParser::kDeepSeekR1:
      return "deepseek_r1";
    case ReasoningParser::kQwen3:
      return "qwen3";
  }
  return "none";
}

bool template_writes_think(std::string_view source) {
  return source.find(kOpen) != std::string_view::npos ||
         source.find(kClose) != std::string_view::npos;
}

ReasoningParser resolve_reasoning_parser(ReasoningParser configured,
                                         std::string_view template_source) {
  if (configured != ReasoningParser::kAuto) return configured;
  return template_writes_think(template_source) ? ReasoningParser::kQwen3 : ReasoningParser::kNone;
}

ReasoningStart reasoning_start(ReasoningParser parser, std::string_view prompt,
                               bool grammar_without_block) {
  if (parser == ReasoningParser::kNone || parser == ReasoningParser::kAuto) {
    return ReasoningStart::kOff;
  }
  const size_t open = prompt.rfind(kOpen);
  const size_t close = prompt.rfind(kClose);
  const bool prompt_opened =
      open != std::string_view::npos && (close == std::string_view::npos || close < open) &&
      prompt.find_first_not_of(kSpace, open + kOpen.size()) == std::string_view::npos;
  if (prompt_opened) return ReasoningStart::kInReasoning;
  if (parser == ReasoningParser::kDeepSeekR1 && !grammar_without_block) {
    return ReasoningStart::kInReasoning;
  }
  return ReasoningStart::kMayOpen;
}

namespace {

json tag(std::string_view begin, json content, std::string_view end) {
  return {{"type", "tag"}, {"begin", begin}, {"content", std::move(content)}, {"end", end}};
}

json sequence(json elements) {
  return {{"type", "sequence"}, {"elements", std::move(elements)}};
}

// The structural-tag format that matches what `inner` alone matches.
Result<json> inner_format(const GrammarSpec& inner) {
  auto parse = [&](const std::string& text) -> Result<json> {
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return invalid_argument(inner.field + ": is not valid JSON");
    return j;
  };
  switch (inner.kind) {
    case GrammarKind::kJsonObject:
      return json{{"type", "json_schema"}, {"json_schema", {{"type", "object"}}}};
    case GrammarKind::kJsonSchema: {
      LLMSERVE_ASSIGN_OR_RETURN(json schema, parse(inner.text));
      return json{{"type", "json_schema"}, {"json_schema", std::move(schema)}};
    }
    case GrammarKind::kRegex:
      return json{{"type", "regex"}, {"pattern", inner.text}};
    case GrammarKind::kChoice:
      return json{{"type", "grammar"}, {"grammar", choice_grammar_ebnf(inner.choices)}};
    case GrammarKind::kEbnf:
      return json{{"type", "grammar"}, {"grammar", inner.text}};
    case GrammarKind::kTaggedJson: {
      LLMSERVE_ASSIGN_OR_RETURN(json schema, parse(inner.text));
      const std::string begin = inner.choices.size() > 0 ? inner.choices[0] : "";
      const std::string end = inner.choices.size() > 1 ? inner.choices[1] : "";
      json block = tag(begin, {{"type", "json_schema"}, {"json_schema", std::move(schema)}}, end);
      json more = {{"type", "repeat"},
                   {"min", 0},
                   {"max", std::max(inner.max_repeats, 1) - 1},
                   {"content", sequence({{{"type", "const_string"}, {"value", "\n"}}, block})}};
      if (inner.max_repeats <= 1) return block;
      return sequence({block, more});
    }
    case GrammarKind::kStructuralTag: {
      LLMSERVE_ASSIGN_OR_RETURN(json st, parse(inner.text));
      if (st.is_object() && st.value("type", "") == "structural_tag" && st.contains("format")) {
        return st["format"];
      }
      return st;
    }
  }
  return invalid_argument(inner.field + ": unknown grammar kind");
}

}  // namespace

Result<GrammarSpec> reasoning_grammar(const GrammarSpec& inner, ReasoningStart start) {
  if (start == ReasoningStart::kOff) return inner;
  LLMSERVE_ASSIGN_OR_RETURN(json reply, inner_format(inner));
  const json any_text = {{"type", "any_text"}};
  const json space = {{"type", "regex"}, {"pattern", "[ \\t\\n\\r]*"}};
  json block = start == ReasoningStart::kInReasoning
                   ? sequence({tag("", any_text, kClose), space})
                   : json{{"type", "optional"},
                          {"content", sequence({tag(kOpen, any_text, kClose), space})}};
  GrammarSpec out;
  out.kind = GrammarKind::kStructuralTag;
  out.text = json{{"type", "structural_tag"}, {"format", sequence({block, reply})}}.dump();
  out.field = inner.field;
  return out;
}

ReasoningBudget reasoning_budget(ReasoningStart start, int32_t max_tokens) {
  ReasoningBudget b;
  if (start == ReasoningStart::kOff || max_tokens < 0) return b;
  b.max_tokens = max_tokens;
  b.open = std::string(kOpen);
  b.close = std::string(kClose);
  b.starts_inside = start == ReasoningStart::kInReasoning;
  return b;
}

ReasoningSplitter::ReasoningSplitter(ReasoningStart start)
    : state_(start == ReasoningStart::kOff           ? State::kOff
             : start == ReasoningStart::kInReasoning ? State::kReasoning
                                                     : State::kMayOpen),
      opened_(start == ReasoningStart::kInReasoning),
      drop_open_(start == ReasoningStart::kInReasoning) {}

ReasoningPieces ReasoningSplitter::feed(std::string_view text) {
  held_ += text;
  ReasoningPieces out;
  run(out, /*at_end=*/false);
  return out;
}

ReasoningPieces ReasoningSplitter::finish() {
  ReasoningPieces out;
  run(out, /*at_end=*/true);
  return out;
}

void ReasoningSplitter::emit_reasoning(std::string_view text, bool trim_end, ReasoningPieces& out) {
  if (!reasoning_started_) {
    const size_t first = text.find_first_not_of(kSpace);
    text = first == std::string_view::npos ? std::string_view() : text.substr(first);
  }
  if (trim_end) {
    const size_t last = text.find_last_not_of(kSpace);
    text = last == std::string_view::npos ? std::string_view() : text.substr(0, last + 1);
  }
  if (text.empty()) return;
  reasoning_started_ = true;
  out.reasoning += text;
}

void ReasoningSplitter::run(ReasoningPieces& out, bool at_end) {
  while (true) {
    switch (state_) {
      case State::kOff:
      case State::kContent:
        out.content += held_;
        held_.clear();
        return;
      case State::kMayOpen: {
        const size_t first = held_.find_first_not_of(kSpace);
        if (first == std::string::npos) {
          if (at_end) {
            out.content += held_;
            held_.clear();
          }
          return;
        }
        const std::string_view rest = std::string_view(held_).substr(first);
        if (rest.substr(0, kOpen.size()) == kOpen) {
          held_.erase(0, first + kOpen.size());
          opened_ = true;
          state_ = State::kReasoning;
          continue;
        }
        if (!at_end && kOpen.substr(0, rest.size()) == rest) return;  // maybe the tag
        state_ = State::kContent;
        continue;
      }
      case State::kReasoning: {
        if (drop_open_) {  // a reply that repeats the <think> its prompt opened
          const size_t first = held_.find_first_not_of(kSpace);
          if (first == std::string::npos && !at_end) return;
          const std::string_view rest = first == std::string::npos
                                            ? std::string_view()
                                            : std::string_view(held_).substr(first);
          if (!at_end && rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return;
          if (rest.substr(0, kOpen.size()) == kOpen) held_.erase(0, first + kOpen.size());
          drop_open_ = false;
        }
        const size_t close = held_.find(kClose);
        if (close != std::string::npos) {
          emit_reasoning(std::string_view(held_).substr(0, close), /*trim_end=*/true, out);
          held_.erase(0, close + kClose.size());
          state_ = State::kContentStart;
          continue;
        }
        if (at_end) {
          emit_reasoning(held_, /*trim_end=*/true, out);
          held_.clear();
          return;
        }
        // Keep back a tag's possible start and the whitespace before it (trimmed at the end).
        size_t keep = held_.size() - partial_tag_at_end(held_, kClose);
        while (keep > 0 && is_space(held_[keep - 1])) --keep;
        emit_reasoning(std::string_view(held_).substr(0, keep), /*trim_end=*/false, out);
        held_.erase(0, keep);
        return;
      }
      case State::kContentStart: {
        const size_t first = held_.find_first_not_of(kSpace);
        if (first == std::string::npos) {
          held_.clear();
          return;
        }
        held_.erase(0, first);
        state_ = State::kContent;
        continue;
      }
    }
  }
}

ReasoningPieces split_reasoning(std::string_view text, ReasoningStart start, bool* opened) {
  ReasoningSplitter splitter(start);
  ReasoningPieces out = splitter.feed(text);
  ReasoningPieces tail = splitter.finish();
  out.reasoning += tail.reasoning;
  out.content += tail.content;
  if (opened) *opened = splitter.opened();
  return out;
}

}  // namespace llmserve
