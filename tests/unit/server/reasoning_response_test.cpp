// Reasoning in the response shapes, fed synthetic engine outputs: message.reasoning_content and
// .reasoning (vLLM's and DeepSeek's names) beside content, streamed as delta.reasoning_content /
// delta.reasoning with the closing tag split across outputs; tool calls read from the content
// part only; n > 1 keeps one split per choice; the Responses API gives a reasoning item.
#include <gtest/gtest.h>

#include "server/http/openai_response.h"
#include "server/http/responses_output.h"

namespace llmserve {
namespace {

using nlohmann::json;

StepOutput out(int32_t index, const std::string& text, FinishReason f = FinishReason::kNone) {
  StepOutput o;
  o.index = index;
  o.text = text;
  o.token_ids = {1};
  o.finish = f;
  o.usage.prompt_tokens = 5;
  o.usage.completion_tokens = 1;
  return o;
}

ResponseContext chat(ReasoningStart start, int32_t n = 1) {
  ResponseContext c;
  c.kind = ApiKind::kChat;
  c.id = "id-r";
  c.model = "m";
  c.n = n;
  c.reasoning = start;
  return c;
}

// What a client that joins the deltas of choice `index` sees.
struct Joined {
  std::string reasoning, reasoning_vllm, content;
  json tool_calls = json::array();
  std::string finish;
};

Joined join(const std::vector<json>& chunks, size_t index = 0) {
  Joined j;
  for (const json& c : chunks) {
    for (const json& ch : c["choices"]) {
      if (ch["index"] != index) continue;
      const json& d = ch["delta"];
      if (d.contains("reasoning_content")) j.reasoning += d["reasoning_content"].get<std::string>();
      if (d.contains("reasoning")) j.reasoning_vllm += d["reasoning"].get<std::string>();
      if (d.contains("content") && d["content"].is_string()) {
        j.content += d["content"].get<std::string>();
      }
      if (d.contains("tool_calls")) {
        for (const json& t : d["tool_calls"]) {
          if (t.contains("id"))
            j.tool_calls.push_back(t);
          else
            j.tool_calls.back()["function"]["arguments"] =
                j.tool_calls.back()["function"]["arguments"].get<std::string>() +
                t["function"]["arguments"].get<std::string>();
        }
      }
      if (ch["finish_reason"].is_string()) j.finish = ch["finish_reason"];
    }
  }
  return j;
}

std::vector<json> stream(ResponseBuilder& b, const std::vector<std::string>& pieces,
                         int32_t index = 0, FinishReason f = FinishReason::kStop) {
  std::vector<json> chunks;
  for (size_t i = 0; i < pieces.size(); ++i) {
    for (json& c :
         b.chunks_for(0, out(index, pieces[i], i + 1 == pieces.size() ? f : FinishReason::kNone))) {
      chunks.push_back(std::move(c));
    }
  }
  return chunks;
}

TEST(ReasoningResponse, StreamedTagSplitAcrossOutputs) {
  ResponseBuilder b(chat(ReasoningStart::kMayOpen));
  const auto chunks =
      stream(b, {"<th", "ink>\nLet me add", " them.\n</", "think>", "\n\nIt is ", "4."});
  const Joined j = join(chunks);
  EXPECT_EQ(j.reasoning, "Let me add them.");
  EXPECT_EQ(j.reasoning_vllm, j.reasoning);
  EXPECT_EQ(j.content, "It is 4.");
  EXPECT_EQ(j.finish, "stop");
  for (const json& c : chunks) {  // no delta carries a piece of a tag
    const std::string text = c.dump();
    EXPECT_EQ(text.find("think"), std::string::npos) << text;
  }
}

TEST(ReasoningResponse, NonStreamingMessageHasBothNames) {
  ResponseBuilder b(chat(ReasoningStart::kInReasoning));
  b.accumulate(0, out(0, "Two plus two.\n</think>\n\nIt is 4.", FinishReason::kStop));
  const json m = b.final_response()["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], "Two plus two.");
  EXPECT_EQ(m["reasoning"], "Two plus two.");
  EXPECT_EQ(m["content"], "It is 4.");
}

TEST(ReasoningResponse, ACutReplyIsAllReasoningAndNullContent) {
  ResponseBuilder b(chat(ReasoningStart::kInReasoning));
  b.accumulate(0, out(0, "still thinking about", FinishReason::kLength));
  const json c = b.final_response()["choices"][0];
  EXPECT_EQ(c["message"]["reasoning_content"], "still thinking about");
  EXPECT_TRUE(c["message"]["content"].is_null());
  EXPECT_EQ(c["finish_reason"], "length");
}

TEST(ReasoningResponse, NoReasoningGivesNullFieldsAndContentAsItWas) {
  ResponseBuilder b(chat(ReasoningStart::kMayOpen));
  b.accumulate(0, out(0, "  Plain answer.", FinishReason::kStop));
  const json m = b.final_response()["choices"][0]["message"];
  EXPECT_TRUE(m["reasoning_content"].is_null());
  EXPECT_TRUE(m["reasoning"].is_null());
  EXPECT_EQ(m["content"], "  Plain answer.");
  ResponseBuilder off(chat(ReasoningStart::kOff));
  off.accumulate(0, out(0, "<think>x</think>y", FinishReason::kStop));
  const json mo = off.final_response()["choices"][0]["message"];
  EXPECT_FALSE(mo.contains("reasoning_content"));
  EXPECT_EQ(mo["content"], "<think>x</think>y");
}

TEST(ReasoningResponse, ToolCallsComeFromTheContentPart) {
  const std::string reply =
      "<think>\nThe user wants weather; a <tool_call> fits.\n</think>\n\n<tool_call>\n"
      "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  auto ctx = chat(ReasoningStart::kMayOpen);
  ctx.tools = true;
  ctx.tool_format = ToolFormat::kHermes;
  ResponseBuilder b(ctx);
  b.accumulate(0, out(0, reply, FinishReason::kStop));
  const json c = b.final_response()["choices"][0];
  EXPECT_EQ(c["message"]["reasoning_content"], "The user wants weather; a <tool_call> fits.");
  EXPECT_TRUE(c["message"]["content"].is_null());
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(c["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            (json{{"city", "Oslo"}}));
  EXPECT_EQ(c["finish_reason"], "tool_calls");

  ResponseBuilder s(ctx);
  std::vector<std::string> pieces;
  for (size_t i = 0; i < reply.size(); i += 5) pieces.push_back(reply.substr(i, 5));
  const Joined j = join(stream(s, pieces));
  EXPECT_EQ(j.reasoning, "The user wants weather; a <tool_call> fits.");
  EXPECT_EQ(j.content, "");
  ASSERT_EQ(j.tool_calls.size(), 1u);
  EXPECT_EQ(j.tool_calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(j.finish, "tool_calls");
}

TEST(ReasoningResponse, EachChoiceHasItsOwnSplit) {
  ResponseBuilder b(chat(ReasoningStart::kInReasoning, 2));
  std::vector<json> chunks;
  for (auto [i, text] : std::vector<std::pair<int, std::string>>{
           {0, "alpha </th"}, {1, "beta"}, {0, "ink> A"}, {1, " </think>B"}}) {
    for (json& c : b.chunks_for(0, out(i, text))) chunks.push_back(std::move(c));
  }
  for (int i : {0, 1}) {
    for (json& c : b.chunks_for(0, out(i, "", FinishReason::kStop))) chunks.push_back(std::move(c));
  }
  EXPECT_EQ(join(chunks, 0).reasoning, "alpha");
  EXPECT_EQ(join(chunks, 0).content, "A");
  EXPECT_EQ(join(chunks, 1).reasoning, "beta");
  EXPECT_EQ(join(chunks, 1).content, "B");
}

TEST(ReasoningResponse, ResponsesApiGivesAReasoningItemFirst) {
  ResponseBuilder b(chat(ReasoningStart::kInReasoning));
  b.accumulate(0, out(0, "why\n</think>\n\nbecause", FinishReason::kStop));
  ResponsesContext rc;
  rc.id = "resp_abc";
  rc.model = "m";
  const auto r = response_from_chat(rc, b.final_response(), Usage{});
  ASSERT_EQ(r["output"].size(), 2u);
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_EQ(r["output"][0]["content"][0],
            (nlohmann::ordered_json{{"type", "reasoning_text"}, {"text", "why"}}));
  EXPECT_EQ(r["output"][1]["type"], "message");
  EXPECT_EQ(r["output"][1]["content"][0]["text"], "because");

  ResponseBuilder sb(chat(ReasoningStart::kInReasoning));
  ResponsesEvents ev(rc);
  std::vector<std::string> types;
  std::string reasoning_deltas;
  for (const auto& e : ev.start()) types.push_back(e["type"]);
  for (const std::string piece : {"wh", "y\n</thi", "nk>\n\nbecau", "se"}) {
    const FinishReason f = piece == "se" ? FinishReason::kStop : FinishReason::kNone;
    for (const json& chunk : sb.chunks_for(0, out(0, piece, f))) {
      for (const auto& e : ev.on_chunk(chunk)) {
        types.push_back(e["type"]);
        if (e["type"] == "response.reasoning_text.delta") reasoning_deltas += e["delta"];
      }
    }
  }
  const auto done = ev.finish(Usage{}, Status::ok());
  for (const auto& e : done) types.push_back(e["type"]);
  EXPECT_EQ(reasoning_deltas, "why");
  const std::vector<std::string> expected = {"response.created",
                                             "response.in_progress",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.reasoning_text.delta",
                                             "response.reasoning_text.delta",
                                             "response.reasoning_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.output_text.delta",
                                             "response.output_text.delta",
                                             "response.output_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.completed"};
  EXPECT_EQ(types, expected);
  const auto& final_output = done.back()["response"]["output"];
  ASSERT_EQ(final_output.size(), 2u);
  EXPECT_EQ(final_output[0]["content"][0]["text"], "why");
  EXPECT_EQ(final_output[1]["content"][0]["text"], "because");
}

}  // namespace
}  // namespace llmserve
