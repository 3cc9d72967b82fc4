// The Messages API's stream events and Message object from scripted engine output: the event
// order, text / thinking / tool use blocks, arguments streamed as generated (checked against
// nlohmann's parse of the whole reply), stop reasons and usage.
#include <gtest/gtest.h>

#include "server/anthropic/message_events.h"
#include "server/anthropic/tool_reply_stream.h"
#include "server/common/tool_calls.h"

namespace llmserve {
namespace {

using ordered = nlohmann::ordered_json;

StepOutput out(std::string text, FinishReason finish = FinishReason::kNone,
               std::string stop_reason = "") {
  StepOutput o;
  o.text = std::move(text);
  o.finish = finish;
  o.stop_reason = std::move(stop_reason);
  o.usage.prompt_tokens = 40;
  o.usage.cached_prompt_tokens = 32;
  o.usage.completion_tokens = 3;
  return o;
}

// Feeds `pieces` (the last one finishes with `finish`), returns every event.
std::vector<ordered> run(MessageEvents& ev, const std::vector<std::string>& pieces,
                         FinishReason finish = FinishReason::kStop, std::string stop = "") {
  std::vector<ordered> all;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const bool last = i + 1 == pieces.size();
    for (auto& e :
         ev.on_output(out(pieces[i], last ? finish : FinishReason::kNone, last ? stop : ""))) {
      all.push_back(std::move(e));
    }
  }
  for (auto& e : ev.finish(Status::ok())) all.push_back(std::move(e));
  return all;
}

std::vector<std::string> types(const std::vector<ordered>& events) {
  std::vector<std::string> t;
  for (const auto& e : events) {
    std::string s = e["type"];
    if (s == "content_block_delta") s += ":" + e["delta"]["type"].get<std::string>();
    t.push_back(s);
  }
  return t;
}

std::vector<std::string> chars(const std::string& s) {
  std::vector<std::string> v;
  for (char c : s) v.emplace_back(1, c);
  return v;
}

TEST(MessageEvents, TextStreamOrderAndMessage) {
  MessageEvents ev({"msg_1", "m", false, ToolFormat::kGeneric, ReasoningStart::kOff, {}});
  auto events = run(ev, {"Hel", "lo"});
  EXPECT_EQ(types(events), (std::vector<std::string>{
                               "message_start", "ping", "content_block_start",
                               "content_block_delta:text_delta", "content_block_delta:text_delta",
                               "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(events[0]["message"]["content"], ordered::array());
  EXPECT_TRUE(events[0]["message"]["stop_reason"].is_null());
  EXPECT_EQ(events[6]["delta"]["stop_reason"], "end_turn");
  EXPECT_EQ(events[6]["usage"], ordered::parse(R"({"input_tokens":8,"cache_creation_input_tokens":0,
      "cache_read_input_tokens":32,"output_tokens":3})"));
  const ordered m = ev.message();
  EXPECT_EQ(m["content"], ordered::parse(R"([{"type":"text","text":"Hello"}])"));
  EXPECT_EQ(m["stop_reason"], "end_turn");
  EXPECT_EQ(anthropic_sse(events[1]), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
}

TEST(MessageEvents, StopReasons) {
  MessageContext ctx{"msg_1", "m", false, ToolFormat::kGeneric, ReasoningStart::kOff, {"END"}};
  MessageEvents a(ctx);
  run(a, {"abc"}, FinishReason::kLength);
  EXPECT_EQ(a.message()["stop_reason"], "max_tokens");
  MessageEvents b(ctx);
  run(b, {"abc"}, FinishReason::kStop, "END");
  EXPECT_EQ(b.message()["stop_reason"], "stop_sequence");
  EXPECT_EQ(b.message()["stop_sequence"], "END");
  MessageEvents c(ctx);
  run(c, {"abc"}, FinishReason::kStop, "2");  // a stop token, not a stop sequence
  EXPECT_EQ(c.message()["stop_reason"], "end_turn");
  EXPECT_TRUE(c.message()["stop_sequence"].is_null());
}

TEST(MessageEvents, ToolCallsStreamTheirArgumentsAsGenerated) {
  const std::string reply =
      R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Par\"is \u00e9", "n": [1, {"x": null}]}},)"
      R"( {"name": "b", "arguments": {}}]})";
  const ordered oracle = ordered::parse(reply);
  MessageEvents ev({"msg_1", "m", true, ToolFormat::kGeneric, ReasoningStart::kOff, {}});
  auto events = run(ev, chars(reply));
  std::vector<std::string> args(2);
  std::vector<int> deltas(2);
  int blocks = -1;
  for (const auto& e : events) {
    if (e["type"] == "content_block_start") {
      ++blocks;
      EXPECT_EQ(e["content_block"]["type"], "tool_use");
      EXPECT_EQ(e["content_block"]["name"], oracle["tool_calls"][blocks]["name"]);
      EXPECT_EQ(e["content_block"]["input"], ordered::object());
    }
    if (e["type"] == "content_block_delta") {
      EXPECT_EQ(e["delta"]["type"], "input_json_delta");
      args[static_cast<size_t>(blocks)] += e["delta"]["partial_json"].get<std::string>();
      ++deltas[static_cast<size_t>(blocks)];
    }
  }
  ASSERT_EQ(blocks, 1);
  // Fed a character at a time, the arguments come a piece at a time, not whole at the end.
  EXPECT_GT(deltas[0], 10);
  EXPECT_EQ(ordered::parse(args[0]), oracle["tool_calls"][0]["arguments"]);
  EXPECT_EQ(ordered::parse(args[1]), oracle["tool_calls"][1]["arguments"]);
  const ordered m = ev.message();
  EXPECT_EQ(m["stop_reason"], "tool_use");
  EXPECT_EQ(m["content"][0]["input"], oracle["tool_calls"][0]["arguments"]);
  EXPECT_NE(m["content"][0]["id"], m["content"][1]["id"]);
  EXPECT_EQ(m["content"][0]["id"].get<std::string>().rfind("toolu_", 0), 0u);
}

TEST(MessageEvents, ResponseBranchIsTextUnescaped) {
  const std::string reply = R"({"response": "line\nquote \" emoji \ud83d\ude00 tab\t."})";
  MessageEvents ev({"msg_1", "m", true, ToolFormat::kGeneric, ReasoningStart::kOff, {}});
  auto events = run(ev, chars(reply));
  EXPECT_EQ(ev.message()["content"],
            ordered::array({{{"type", "text"},
                             {"text", ordered::parse(reply)["response"].get<std::string>()}}}));
  EXPECT_EQ(ev.message()["stop_reason"], "end_turn");
}

TEST(ToolReplyStream, ReplySchemaValueAndPlainText) {
  ToolReplyStream s;
  std::string text;
  for (char c : std::string(R"({"response": {"a": [1, "}"]}})")) {
    for (auto& p : s.feed(std::string(1, c))) text += p.text;
  }
  EXPECT_EQ(ordered::parse(text), ordered::parse(R"({"a": [1, "}"]})"));
  ToolReplyStream plain;
  EXPECT_TRUE(plain.feed("just words").empty());
  std::string unparsed;
  EXPECT_TRUE(plain.finish(&unparsed).empty());
  EXPECT_EQ(unparsed, "just words");
}

// A Hermes reply (text, then calls in <tool_call> tags) fed a character at a time gives the
// blocks the chat path's parser (parse_tool_reply) reads from the whole text.
void expect_hermes_like_chat(const std::string& reply) {
  MessageEvents ev({"msg_1", "m", true, ToolFormat::kHermes, ReasoningStart::kOff, {}});
  auto events = run(ev, chars(reply));
  const ToolReply oracle = parse_tool_reply(reply, 0, ToolFormat::kHermes);
  const ordered content = ev.message()["content"];
  size_t k = 0;
  if (!oracle.content.empty()) {
    ASSERT_GT(content.size(), 0u) << reply;
    EXPECT_EQ(content[0]["type"], "text") << reply;
    EXPECT_EQ(content[0]["text"], oracle.content) << reply;
    k = 1;
  }
  ASSERT_EQ(content.size(), k + oracle.calls.size()) << reply << "\n" << content.dump();
  for (const ToolCall& c : oracle.calls) {
    EXPECT_EQ(content[k]["name"], c.name);
    EXPECT_EQ(content[k]["input"], ordered::parse(c.arguments));
    ++k;
  }
  EXPECT_EQ(ev.message()["stop_reason"], oracle.is_call() ? "tool_use" : "end_turn");
  if (oracle.is_call()) {
    int deltas = 0;
    for (const auto& e : events) {
      if (e["type"] == "content_block_delta" && e["delta"]["type"] == "input_json_delta") ++deltas;
    }
    EXPECT_GT(deltas, 3) << reply;  // streamed as generated
  }
}

TEST(MessageEvents, HermesCallsStreamFromTheirTags) {
  expect_hermes_like_chat(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, "
      "2]}}\n</tool_call>\n");
  expect_hermes_like_chat(
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"a < b\"}}\n</tool_call>");
  expect_hermes_like_chat("Just an answer with a < sign and <tool text.");
  expect_hermes_like_chat("Before <tool_call>not json</tool_call> after");
  expect_hermes_like_chat("Cut short <tool_ca");
}

TEST(MessageEvents, ThinkingThenText) {
  MessageEvents ev({"msg_1", "m", false, ToolFormat::kGeneric, ReasoningStart::kInReasoning, {}});
  auto events = run(ev, {"Let me ", "think.</th", "ink>\n\nThe answer."});
  const auto t = types(events);
  EXPECT_EQ(t[2], "content_block_start");
  EXPECT_EQ(events[2]["content_block"],
            ordered::parse(R"({"type":"thinking","thinking":"","signature":""})"));
  EXPECT_NE(std::find(t.begin(), t.end(), "content_block_delta:thinking_delta"), t.end());
  EXPECT_EQ(ev.message()["content"], ordered::parse(R"([
      {"type":"thinking","thinking":"Let me think.","signature":""},
      {"type":"text","text":"The answer."}])"));
}

TEST(MessageEvents, ErrorEventAfterStart) {
  MessageEvents ev({"msg_1", "m", false, ToolFormat::kGeneric, ReasoningStart::kOff, {}});
  ev.on_output(out("partial"));
  auto tail = ev.finish({StatusCode::kInternal, "engine failed"});
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(
      tail[0],
      ordered::parse(R"({"type":"error","error":{"type":"api_error","message":"engine failed"}})"));
  EXPECT_EQ(message_id("req-1").size(), 28u);
  EXPECT_NE(message_id("req-1"), message_id("req-2"));
}

}  // namespace
}  // namespace llmserve
