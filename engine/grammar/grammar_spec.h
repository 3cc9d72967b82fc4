// What a request's output must match (structured outputs). The front ends fill it from
// `response_format`, vLLM's `structured_outputs` or the tools of a chat request; the grammar
// service compiles it (off the engine thread, cached by key()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmserve {

enum class GrammarKind {
  kJsonObject,  // any JSON object (`response_format: {"type": "json_object"}`)
  kJsonSchema,  // text: a JSON Schema document
  kRegex,       // text: a regular expression the whole output matches
  kChoice,      // choices: the output is exactly one of them
  kEbnf,        // text: a grammar in xgrammar's EBNF, start rule `root`
  // text: a JSON Schema; choices: {begin, end}: the output is 1..max_repeats values of the
  // schema, each between the two tags, "\n" between them (Hermes-style <tool_call> blocks).
  kTaggedJson,
  // text: xgrammar's structural tag JSON (the gateway's forced tool calls, Harmony formats).
  kStructuralTag,
};
const char* grammar_kind_name(GrammarKind kind);  // "json_object", "json_schema", ...

struct GrammarSpec {
  GrammarKind kind = GrammarKind::kJsonObject;
  std::string text;
  std::vector<std::string> choices;
  int32_t max_repeats = 1;  // kTaggedJson
  // The request field it came from, for error messages ("response_format", "tools", ...).
  std::string field = "response_format";

  // Stable over runs: kind, text, choices and max_repeats (not `field`).
  uint64_t key() const;

  friend bool operator==(const GrammarSpec&, const GrammarSpec&) = default;
};

}  // namespace llmserve
