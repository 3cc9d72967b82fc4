// Reasoning parser: the split of a reply into reasoning and content by vLLM's documented rules
// (docs.vllm.ai "Reasoning Outputs": deepseek_r1 / qwen3; a block never closed is all
// reasoning), fed whole and fed in every split a stream can make; where a reply starts, read
// from prompts that jinja2 rendered (tests/fixtures/chat/chat_cases.json); the grammar that lets
// the block come before a structured output, run with xgrammar.
#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/grammar/grammar_compiler.h"
#include "server/common/reasoning_parser.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve::testing {
namespace {

constexpr auto kIn = ReasoningStart::kInReasoning;
constexpr auto kMay = ReasoningStart::kMayOpen;

struct Case {
  std::string reply;
  ReasoningStart start;
  std::string reasoning, content;
};

// The expected splits, written from the rules in reasoning_parser.h.
const std::vector<Case> kCases = {
    {"<think>\nTwo plus two.\n</think>\n\nIt is 4.", kMay, "Two plus two.", "It is 4."},
    {"It is 4.", kMay, "", "It is 4."},
    {"  \n It is 4. <think>x</think>", kMay, "", "  \n It is 4. <think>x</think>"},
    {"\n<think>a</think>b", kMay, "a", "b"},
    {"<think>cut short", kMay, "cut short", ""},
    {"<thin", kMay, "", "<thin"},
    {"<think></think>", kMay, "", ""},
    {"Two plus two.\n</think>\n\nIt is 4.", kIn, "Two plus two.", "It is 4."},
    {"<think>\nTwo.</think>4", kIn, "Two.", "4"},
    {"all reasoning, never closed  \n", kIn, "all reasoning, never closed", ""},
    {"a </thi", kIn, "a </thi", ""},
    {"a</think>b</think>c", kIn, "a", "b</think>c"},
    {"é</think>ü", kIn, "é", "ü"},
    {"x<think>y", ReasoningStart::kOff, "", "x<think>y"},
    {"   ", kMay, "", "   "},
    {"</think>", kIn, "", ""},
};

ReasoningPieces fed_in(const std::vector<std::string>& pieces, ReasoningStart start) {
  ReasoningSplitter s(start);
  ReasoningPieces all;
  for (const std::string& p : pieces) {
    ReasoningPieces got = s.feed(p);
    all.reasoning += got.reasoning;
    all.content += got.content;
  }
  ReasoningPieces tail = s.finish();
  all.reasoning += tail.reasoning;
  all.content += tail.content;
  return all;
}

TEST(ReasoningSplit, WholeRepliesFollowTheRules) {
  for (const Case& c : kCases) {
    const ReasoningPieces p = split_reasoning(c.reply, c.start);
    EXPECT_EQ(p.reasoning, c.reasoning) << c.reply;
    EXPECT_EQ(p.content, c.content) << c.reply;
  }
}

TEST(ReasoningSplit, EverySplitOfAStreamGivesTheSameText) {
  for (const Case& c : kCases) {
    for (size_t a = 0; a <= c.reply.size(); ++a) {
      for (size_t b = a; b <= c.reply.size(); ++b) {
        const ReasoningPieces p =
            fed_in({c.reply.substr(0, a), c.reply.substr(a, b - a), c.reply.substr(b)}, c.start);
        ASSERT_EQ(p.reasoning, c.reasoning) << c.reply << " split at " << a << ", " << b;
        ASSERT_EQ(p.content, c.content) << c.reply << " split at " << a << ", " << b;
      }
    }
    std::vector<std::string> bytes;
    for (char ch : c.reply) bytes.emplace_back(1, ch);
    const ReasoningPieces p = fed_in(bytes, c.start);
    EXPECT_EQ(p.reasoning, c.reasoning) << c.reply << " byte by byte";
    EXPECT_EQ(p.content, c.content) << c.reply << " byte by byte";
  }
}

TEST(ReasoningSplit, NothingOfATagIsGivenOutBeforeItIsKnown) {
  ReasoningSplitter s(kIn);
  EXPECT_EQ(s.feed("step one").reasoning, "step one");
  const ReasoningPieces held = s.feed("\n</th");  // a tag's start and the whitespace before it
  EXPECT_EQ(held.reasoning, "");
  EXPECT_EQ(held.content, "");
  const ReasoningPieces rest = s.feed("ink>\n\nAnswer");
  EXPECT_EQ(rest.reasoning, "");
  EXPECT_EQ(rest.content, "Answer");
  EXPECT_TRUE(s.opened());
}

TEST(ReasoningSplit, ParserNames) {
  for (const char* name : {"auto", "none", "deepseek_r1", "qwen3"}) {
    auto p = reasoning_parser_from_name(name);
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_STREQ(reasoning_parser_name(*p), name);
  }
  EXPECT_FALSE(reasoning_parser_from_name("deepseek").has_value());
}

// The prompts of real templates as jinja2 rendered them.
class ReasoningStartOfTemplates : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream in(std::string(LLMSERVE_FIXTURES_DIR) + "/chat/chat_cases.json");
    ASSERT_TRUE(in.good());
    fixture_ = nlohmann::json::parse(in);
  }
  std::string prompt(const std::string& tmpl, const std::string& conversation) const {
    for (const auto& c : fixture_["cases"]) {
      if (c["template"] == tmpl + ".jinja" && c["conversation"] == conversation) {
        return c.value("expected", "");
      }
    }
    ADD_FAILURE() << "no case " << tmpl << " x " << conversation;
    return "";
  }
  std::string source(const std::string& tmpl) const {
    std::ifstream in(std::string(LLMSERVE_FIXTURES_DIR) + "/chat/templates/" + tmpl + ".jinja");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  nlohmann::json fixture_;
};

TEST_F(ReasoningStartOfTemplates, AutoPicksQwen3ForThinkingTemplatesOnly) {
  for (const char* t : {"qwen3", "qwq", "deepseek_r1_distill_qwen"}) {
    EXPECT_EQ(resolve_reasoning_parser(ReasoningParser::kAuto, source(t)), ReasoningParser::kQwen3)
        << t;
  }
  for (const char* t : {"smollm2", "qwen2_5", "llama3_1", "gemma3_it", "phi3_5_mini", "phi4_mini",
                        "mistral_nemo", "mixtral_instruct"}) {
    EXPECT_EQ(resolve_reasoning_parser(ReasoningParser::kAuto, source(t)), ReasoningParser::kNone)
        << t;
  }
  EXPECT_EQ(resolve_reasoning_parser(ReasoningParser::kDeepSeekR1, source("smollm2")),
            ReasoningParser::kDeepSeekR1);
}

TEST_F(ReasoningStartOfTemplates, ThePromptsEndSaysWhereTheReplyStarts) {
  const auto q = ReasoningParser::kQwen3;
  // Qwen3 hybrid: thinking on, the model opens the block itself; off, the template closes it.
  EXPECT_EQ(reasoning_start(q, prompt("qwen3", "thinking_on"), false), kMay);
  EXPECT_EQ(reasoning_start(q, prompt("qwen3", "thinking_off"), false), kMay);
  // QwQ's and DeepSeek-R1's templates open it in the generation prompt (these copies close it
  // again unless enable_thinking is true).
  EXPECT_EQ(reasoning_start(q, prompt("qwq", "thinking_on"), false), kIn);
  EXPECT_EQ(reasoning_start(q, prompt("deepseek_r1_distill_qwen", "thinking_on"), false), kIn);
  EXPECT_EQ(reasoning_start(q, prompt("qwq", "single_user"), false), kMay);
  EXPECT_EQ(reasoning_start(q, prompt("deepseek_r1_distill_qwen", "thinking_off"), false), kMay);
  // An earlier turn's closed block is no open one.
  EXPECT_EQ(reasoning_start(q, prompt("qwen3", "reasoning_tool_turn"), false), kMay);
  EXPECT_EQ(reasoning_start(ReasoningParser::kNone, prompt("qwq", "single_user"), false),
            ReasoningStart::kOff);
  // deepseek_r1 reads every reply as reasoning first, unless a grammar leaves it no room.
  EXPECT_EQ(reasoning_start(ReasoningParser::kDeepSeekR1, prompt("smollm2", "single_user"), false),
            kIn);
  EXPECT_EQ(reasoning_start(ReasoningParser::kDeepSeekR1, prompt("smollm2", "single_user"), true),
            kMay);
}

class ReasoningGrammar : public ::testing::Test {
 protected:
  bool accepts(const GrammarSpec& spec, const std::string& text) {
    auto g = compiler_.compile_and_wait(
        spec, std::chrono::steady_clock::now() + std::chrono::seconds(60));
    EXPECT_TRUE(g.is_ok()) << g.status().to_string();
    if (!g.is_ok()) return false;
    TokenMatcher m = (*g)->make_matcher();
    for (int32_t t : tok_.bytes_of(text)) {
      if (!m.accept(t)) return false;
    }
    return m.is_completed();
  }
  GrammarSpec wrapped(const GrammarSpec& inner, ReasoningStart start) {
    auto r = reasoning_grammar(inner, start);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? *r : inner;
  }

  FakeTokenizer tok_;
  GrammarCompiler compiler_{tok_, 300, GrammarCompilerOptions{}};
};

TEST_F(ReasoningGrammar, AJsonSchemaFollowsTheReasoningBlock) {
  GrammarSpec schema;
  schema.kind = GrammarKind::kJsonSchema;
  schema.text = R"({"type": "object", "properties": {"a": {"type": "integer"}},
                    "required": ["a"], "additionalProperties": false})";
  const GrammarSpec in = wrapped(schema, kIn);
  EXPECT_EQ(in.kind, GrammarKind::kStructuralTag);
  EXPECT_TRUE(accepts(in, "Let me think: a is 1.</think>\n\n{\"a\": 1}"));
  EXPECT_TRUE(accepts(in, "</think>{\"a\": 1}"));
  EXPECT_FALSE(accepts(in, "{\"a\": 1}"));                          // the block must close first
  EXPECT_FALSE(accepts(in, "thinking</think>\n\n{\"a\": \"x\"}"));  // then the schema holds
  const GrammarSpec may = wrapped(schema, kMay);
  EXPECT_TRUE(accepts(may, "<think>\nhm\n</think>\n\n{\"a\": 2}"));
  EXPECT_TRUE(accepts(may, "{\"a\": 2}"));
  EXPECT_FALSE(accepts(may, "hm</think>{\"a\": 2}"));
  EXPECT_FALSE(accepts(may, "<think>hm</think>{\"b\": 2}"));
  EXPECT_EQ(wrapped(schema, ReasoningStart::kOff), schema);
}

TEST_F(ReasoningGrammar, EveryGrammarKindKeepsItsLanguage) {
  GrammarSpec regex;
  regex.kind = GrammarKind::kRegex;
  regex.text = "(yes|no)!";
  EXPECT_TRUE(accepts(wrapped(regex, kIn), "hmm</think>yes!"));
  EXPECT_FALSE(accepts(wrapped(regex, kIn), "hmm</think>maybe!"));
  GrammarSpec choice;
  choice.kind = GrammarKind::kChoice;
  choice.choices = {"red", "green"};
  EXPECT_TRUE(accepts(wrapped(choice, kMay), "<think>x</think> green"));
  EXPECT_FALSE(accepts(wrapped(choice, kMay), "<think>x</think> blue"));
  GrammarSpec ebnf;
  ebnf.kind = GrammarKind::kEbnf;
  ebnf.text = R"(root ::= "a"+)";
  EXPECT_TRUE(accepts(wrapped(ebnf, kIn), "z</think>aaa"));
  EXPECT_FALSE(accepts(wrapped(ebnf, kIn), "z</think>ab"));
  GrammarSpec tagged;
  tagged.kind = GrammarKind::kTaggedJson;
  tagged.text = R"({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                    "additionalProperties": false})";
  tagged.choices = {"<tool_call>\n", "\n</tool_call>"};
  tagged.max_repeats = 2;
  const std::string call = "<tool_call>\n{\"n\": 1}\n</tool_call>";
  EXPECT_TRUE(accepts(wrapped(tagged, kMay), "<think>t</think>\n\n" + call));
  EXPECT_TRUE(accepts(wrapped(tagged, kMay), call + "\n" + call));
  EXPECT_FALSE(accepts(wrapped(tagged, kMay), call + "\n" + call + "\n" + call));
  GrammarSpec object;
  object.kind = GrammarKind::kJsonObject;
  EXPECT_TRUE(accepts(wrapped(object, kIn), "x</think>{\"k\": [1]}"));
  EXPECT_FALSE(accepts(wrapped(object, kIn), "x</think>[1]"));
}

TEST(ReasoningBudgetRequest, FollowsWhereTheReplyStarts) {
  EXPECT_FALSE(reasoning_budget(ReasoningStart::kOff, 5).active());  // no section: no budget
  EXPECT_FALSE(reasoning_budget(ReasoningStart::kInReasoning, -1).active());
  const ReasoningBudget in = reasoning_budget(ReasoningStart::kInReasoning, 5);
  EXPECT_EQ(in.max_tokens, 5);
  EXPECT_TRUE(in.starts_inside);
  EXPECT_EQ(in.open, "<think>");
  EXPECT_EQ(in.close, "</think>");
  const ReasoningBudget may = reasoning_budget(ReasoningStart::kMayOpen, 0);
  EXPECT_TRUE(may.active());
  EXPECT_FALSE(may.starts_inside);
}

}  // namespace
}  // namespace llmserve::testing
