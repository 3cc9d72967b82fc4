#include "engine/runner/stop_checker.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve {
namespace {

using testing::FakeTokenizer;

const std::vector<int32_t> kEos = {FakeTokenizer::kEos, FakeTokenizer::kImEnd};

struct Streamed {
  std::vector<std::string> deltas;
  OutputDelta last;
  std::string joined() const {
    std::string s;
    for (const auto& d : deltas) s += d;
    return s;
  }
};

Streamed feed(StopChecker& sc, const std::vector<int32_t>& ids) {
  Streamed r;
  for (int32_t id : ids) {
    if (sc.finished()) break;
    r.last = sc.append(id);
    r.deltas.push_back(r.last.text);
  }
  if (!sc.finished()) r.deltas.push_back(sc.flush());
  return r;
}

TEST(StopChecker, StopStringAcrossDeltasIsHeldBackAndCut) {
  FakeTokenizer tok;
  SamplingParams p;
  p.stop = {"STOP"};
  StopChecker sc(tok, p, kEos, 100);
  EXPECT_EQ(sc.append(tok.id_of("hello")).text, "hello");
  EXPECT_EQ(sc.append(tok.id_of(" ")).text, " ");
  EXPECT_EQ(sc.append(tok.id_of("ST")).text, "");  // could become STOP
  OutputDelta d = sc.append(tok.id_of("OP"));
  EXPECT_EQ(d.text, "");
  EXPECT_EQ(d.finish, FinishReason::kStop);
  EXPECT_EQ(d.stop_reason, "STOP");
  EXPECT_EQ(sc.text(), "hello ");
}

TEST(StopChecker, IncludeStopStringInOutput) {
  FakeTokenizer tok;
  SamplingParams p;
  p.stop = {"STOP"};
  p.include_stop_str_in_output = true;
  StopChecker sc(tok, p, kEos, 100);
  Streamed r = feed(sc, {tok.id_of("hello"), tok.id_of("ST"), tok.id_of("OP"), tok.id_of(" the")});
  EXPECT_EQ(r.deltas[1], "ST");  // nothing held: the stop string is emitted anyway
  EXPECT_EQ(r.joined(), "helloSTOP");
  EXPECT_EQ(sc.text(), "helloSTOP");
  EXPECT_EQ(r.last.finish, FinishReason::kStop);
}

TEST(StopChecker, MatchInsideOneDeltaCutsTheRest) {
  FakeTokenizer tok;
  SamplingParams p;
  p.stop = {"ll", "lo w"};
  StopChecker sc(tok, p, kEos, 100);
  OutputDelta d = sc.append(tok.id_of("hello"));
  EXPECT_EQ(d.text, "he");
  EXPECT_EQ(d.stop_reason, "ll");  // the earliest match wins
}

TEST(StopChecker, FalsePrefixIsReleased) {
  FakeTokenizer tok;
  SamplingParams p;
  p.stop = {"STOP"};
  StopChecker sc(tok, p, kEos, 100);
  EXPECT_EQ(sc.append(tok.id_of("ST")).text, "");
  EXPECT_EQ(sc.append(tok.id_of("ld")).text, "STld");
  EXPECT_EQ(sc.append(tok.id_of("S")).text, "");
  OutputDelta d = sc.append(tok.id_of("hello"));  // max not reached
  EXPECT_EQ(d.text, "Shello");
  EXPECT_FALSE(d.finished());
}

TEST(StopChecker, HeldTextIsFlushedAtLength) {
  FakeTokenizer tok;
  SamplingParams p;
  p.stop = {"STOP"};
  StopChecker sc(tok, p, kEos, 2);
  EXPECT_EQ(sc.append(tok.id_of("hello")).text, "hello");
  OutputDelta d = sc.append(tok.id_of("ST"));
  EXPECT_EQ(d.text, "ST");
  EXPECT_EQ(d.finish, FinishReason::kLength);
  EXPECT_EQ(sc.text(), "helloST");
}

TEST(StopChecker, EosAndStopTokenIds) {
  FakeTokenizer tok;
  SamplingParams p;
  p.skip_special_tokens = false;
  {
    StopChecker sc(tok, p, kEos, 100);
    Streamed r = feed(sc, {tok.id_of("hello"), FakeTokenizer::kEos, tok.id_of(" the")});
    EXPECT_EQ(r.last.finish, FinishReason::kStop);
    EXPECT_EQ(r.last.stop_reason, "0");
    EXPECT_EQ(sc.text(), "hello");  // the EOS text is left out
    EXPECT_EQ(sc.num_tokens(), 2);
  }
  {
    p.ignore_eos = true;
    StopChecker sc(tok, p, kEos, 100);
    Streamed r = feed(sc, {tok.id_of("hello"), FakeTokenizer::kEos, tok.id_of(" the")});
    EXPECT_FALSE(sc.finished());
    EXPECT_EQ(r.joined(), "hello<eos> the");
  }
  {
    p.ignore_eos = false;
    p.stop_token_ids = {tok.id_of(" the")};
    StopChecker sc(tok, p, kEos, 100);
    Streamed r = feed(sc, {tok.id_of("hello"), tok.id_of(" the"), tok.id_of("ld")});
    EXPECT_EQ(r.last.stop_reason, std::to_string(tok.id_of(" the")));
    EXPECT_EQ(r.joined(), "hello");
    p.include_stop_str_in_output = true;
    StopChecker inc(tok, p, kEos, 100);
    EXPECT_EQ(feed(inc, {tok.id_of("hello"), tok.id_of(" the")}).joined(), "hello the");
  }
}

TEST(StopChecker, StopsWaitForMinTokens) {
  FakeTokenizer tok;
  SamplingParams p;
  p.stop = {"ld"};
  p.min_tokens = 2;
  StopChecker sc(tok, p, kEos, 100);
  Streamed r =
      feed(sc, {tok.id_of("ld"), FakeTokenizer::kEos, tok.id_of("hello"), tok.id_of("ld")});
  EXPECT_EQ(r.last.finish, FinishReason::kStop);
  EXPECT_EQ(r.last.stop_reason, "ld");
  EXPECT_EQ(sc.text(), "ldhello");
  EXPECT_EQ(r.joined(), sc.text());
}

TEST(StopChecker, StopStringWithSplitCharacter) {
  FakeTokenizer tok;
  SamplingParams p;
  p.stop = {"\xE2\x82\xAC!"};
  StopChecker sc(tok, p, kEos, 100);
  Streamed r = feed(sc, {tok.id_of("hello"), tok.id_of("\xE2\x82"), tok.id_of("\xAC"),
                         tok.id_of("!"), tok.id_of("ld")});
  EXPECT_EQ(r.deltas[1], "");
  EXPECT_EQ(r.deltas[2], "");  // "€" is a prefix of the stop string
  EXPECT_EQ(r.last.stop_reason, "\xE2\x82\xAC!");
  EXPECT_EQ(r.joined(), "hello");
}

// Property: with ASCII stop strings, the output is the full decode up to the earliest stop
// occurrence at the first token where one appears, and the deltas concatenate to text().
TEST(StopChecker, RandomStreamsMatchOracle) {
  FakeTokenizer tok;
  std::mt19937 gen(7);
  const std::vector<std::string> pieces = {"hello", " world", " wor", "ld",  "STOP", "ST", "OP",
                                           " the",  " ",      "  ",   "</s", "top>", "o",  "S"};
  const std::vector<std::vector<std::string>> stop_sets = {
      {"STOP"}, {"ld", "o w"}, {"</stop>"}, {" ", "xx"}, {"hello world"}};
  for (int iter = 0; iter < 3000; ++iter) {
    SamplingParams p;
    p.stop = stop_sets[gen() % stop_sets.size()];
    p.include_stop_str_in_output = gen() % 2;
    std::vector<int32_t> ids;
    const int n = 1 + gen() % 15;
    for (int i = 0; i < n; ++i) ids.push_back(tok.id_of(pieces[gen() % pieces.size()]));
    StopChecker sc(tok, p, kEos, n);
    Streamed r = feed(sc, ids);
    // Oracle.
    std::string expect = tok.decode(ids);
    bool stopped = false;
    for (int k = 1; k <= n && !stopped; ++k) {
      const std::string text = tok.decode(std::span<const int32_t>(ids).first(k));
      size_t best = std::string::npos, len = 0;
      for (const auto& s : p.stop) {
        const size_t pos = text.find(s);
        if (pos < best) best = pos, len = s.size();
      }
      if (best != std::string::npos) {
        expect = text.substr(0, p.include_stop_str_in_output ? best + len : best);
        stopped = true;
      }
    }
    ASSERT_EQ(sc.text(), expect) << "iteration " << iter;
    ASSERT_EQ(r.joined(), expect) << "iteration " << iter;
    ASSERT_EQ(r.last.finish, stopped ? FinishReason::kStop : FinishReason::kLength);
  }
}

}  // namespace
}  // namespace llmserve
