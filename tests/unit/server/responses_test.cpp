// /v1/responses: the request translated to the chat path, errors named in Responses terms, and
// the chat output rendered as a Response object and as typed stream events.
#include <gtest/gtest.h>

#include "server/http/chat_request.h"
#include "server/http/http_error.h"
#include "server/http/openai_response.h"
#include "server/http/responses_output.h"
#include "server/http/responses_request.h"
#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

// Renders every message with its tool calls, so that tests see what reached the template.
Result<std::string> render_all(const json& messages, bool add_generation_prompt) {
  return messages.dump() + (add_generation_prompt ? "<gen>" : "");
}

RequestLimits limits() {
  RequestLimits l;
  l.vocab_size = testing::FakeTokenizer::kVocab;
  l.max_model_len = 8192;
  return l;
}

Result<GenerationRequest> parse_responses(const std::string& body) {
  static testing::FakeTokenizer tok;
  return parse_responses_request(body, tok, ChatRenderer(render_all), limits());
}

Result<GenerationRequest> parse_chat(const std::string& body) {
  static testing::FakeTokenizer tok;
  return parse_chat_request(body, tok, ChatRenderer(render_all), limits());
}

// The HTTP error a Responses body gets (status 200 when accepted).
HttpError answer(const std::string& body) {
  auto r = parse_responses(body);
  if (r.is_ok()) return HttpError{200, "", "", "", "", 0};
  return http_error_from_status(r.status());
}

constexpr const char* kTool =
    R"({"type":"function","name":"get_weather","description":"Weather in a city",
        "parameters":{"type":"object","properties":{"city":{"type":"string"},
        "unit":{"type":"string"}},"required":["city"]},"strict":true})";

TEST(ResponsesRequest, StringInputAndInstructionsAreTheChatMessages) {
  auto t = translate_responses_request(
      R"({"model":"m","input":"hi","instructions":"Be brief.","max_output_tokens":7,
          "temperature":0.5,"top_p":0.9,"seed":3,"store":false,"include":[],"reasoning":{},
          "truncation":"auto","some_future_field":1})");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->chat_body["messages"], ordered::parse(R"([{"role":"system","content":"Be brief."},
      {"role":"user","content":"hi"}])"));
  EXPECT_EQ(t->chat_body["max_tokens"], 7);
  EXPECT_EQ(t->chat_body["temperature"], 0.5);
  EXPECT_EQ(t->chat_body["top_p"], 0.9);
  EXPECT_EQ(t->chat_body["seed"], 3);
  EXPECT_EQ(t->chat_body["model"], "m");
  EXPECT_FALSE(t->chat_body.contains("some_future_field"));  // unknown fields: ignored
  EXPECT_FALSE(t->chat_body.contains("store"));
  EXPECT_EQ(t->echo["instructions"], "Be brief.");
  EXPECT_EQ(t->echo["max_output_tokens"], 7);
}

TEST(ResponsesRequest, SameGenerationRequestAsTheEquivalentChatBody) {
  auto r = parse_responses(
      R"({"input":[{"role":"user","content":[{"type":"input_text","text":"a"},
          {"type":"input_text","text":"b"}]},{"type":"message","role":"assistant",
          "content":[{"type":"output_text","text":"c"}]},{"role":"user","content":"d"}],
          "instructions":"sys","max_output_tokens":9,"temperature":0})");
  auto c = parse_chat(
      R"({"messages":[{"role":"system","content":"sys"},{"role":"user","content":"ab"},
          {"role":"assistant","content":"c"},{"role":"user","content":"d"}],
          "max_tokens":9,"temperature":0})");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(r->prompt_texts, c->prompt_texts);
  EXPECT_EQ(r->prompt_token_ids, c->prompt_token_ids);
  EXPECT_EQ(r->params.max_tokens, 9);
  EXPECT_EQ(r->params.temperature, 0.0f);
}

TEST(ResponsesRequest, FlatFunctionToolsAndNamedToolChoice) {
  auto t = translate_responses_request(std::string(R"({"input":"w","tools":[)") + kTool +
                                       R"(],"tool_choice":{"type":"function","name":"get_weather"},
                                       "parallel_tool_calls":false})");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  const ordered& fn = t->chat_body["tools"][0]["function"];
  EXPECT_EQ(t->chat_body["tools"][0]["type"], "function");
  EXPECT_EQ(fn["name"], "get_weather");
  EXPECT_EQ(fn["description"], "Weather in a city");
  EXPECT_EQ(fn["strict"], true);
  // The schema keeps the caller's property order (the grammar generates in that order).
  EXPECT_EQ(fn["parameters"]["properties"].begin().key(), "city");
  EXPECT_EQ(t->chat_body["tool_choice"],
            ordered::parse(R"({"type":"function","function":{"name":"get_weather"}})"));
  EXPECT_EQ(t->chat_body["parallel_tool_calls"], false);
  auto r = parse_responses(std::string(R"({"input":"w","tool_choice":"required","tools":[)") +
                           kTool + "]}");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->tools.active());
  EXPECT_EQ(r->tools.choice, ToolChoice::kRequired);
  ASSERT_TRUE(r->grammar.has_value());  // the call format is enforced
}

TEST(ResponsesRequest, FunctionCallItemsBecomeOneAssistantTurnAndToolMessages) {
  auto t = translate_responses_request(std::string(R"({"input":[
      {"role":"user","content":"weather?"},
      {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"A\"}",
       "id":"fc_1","status":"completed"},
      {"type":"function_call","call_id":"c2","name":"get_weather","arguments":"{\"city\":\"B\"}"},
      {"type":"function_call_output","call_id":"c1","output":"sunny"},
      {"type":"function_call_output","call_id":"c2",
       "output":[{"type":"input_text","text":"rain"}]}],"tools":[)") +
                                       kTool + "]}");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  const ordered& m = t->chat_body["messages"];
  ASSERT_EQ(m.size(), 4u) << m.dump();
  EXPECT_EQ(m[1]["role"], "assistant");
  EXPECT_TRUE(m[1]["content"].is_null());
  ASSERT_EQ(m[1]["tool_calls"].size(), 2u);
  EXPECT_EQ(m[1]["tool_calls"][1]["id"], "c2");
  EXPECT_EQ(m[1]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"A\"}");
  EXPECT_EQ(m[2], ordered::parse(R"({"role":"tool","tool_call_id":"c1","content":"sunny"})"));
  EXPECT_EQ(m[3]["content"], "rain");
  EXPECT_EQ(t->message_source, (std::vector<int>{0, 1, 3, 4}));
  // The chat path accepts the history (every output answers a call).
  auto r = parse_responses(std::string(R"({"input":[{"role":"user","content":"weather?"},
      {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{}"},
      {"type":"function_call_output","call_id":"c1","output":"sunny"}],"tools":[)") +
                           kTool + "]}");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_NE(r->prompt_texts[0].find("sunny"), std::string::npos);
}

TEST(ResponsesRequest, TextFormatJsonSchemaIsResponseFormat) {
  auto t = translate_responses_request(
      R"({"input":"x","text":{"format":{"type":"json_schema","name":"person","strict":true,
          "schema":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},
          "required":["name","age"],"additionalProperties":false}}}})");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  const ordered& rf = t->chat_body["response_format"];
  EXPECT_EQ(rf["type"], "json_schema");
  EXPECT_EQ(rf["json_schema"]["name"], "person");
  EXPECT_EQ(rf["json_schema"]["schema"]["properties"].begin().key(), "name");
  auto r = parse_responses(
      R"({"input":"x","text":{"format":{"type":"json_schema","name":"p",
          "schema":{"type":"object"}}}})");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(r->grammar.has_value());
  EXPECT_EQ(r->grammar->kind, GrammarKind::kJsonSchema);
  auto obj = parse_responses(R"({"input":"x","text":{"format":{"type":"json_object"}}})");
  ASSERT_TRUE(obj.is_ok()) << obj.status().to_string();
  EXPECT_TRUE(obj->grammar.has_value());
  auto text = parse_responses(R"({"input":"x","text":{"format":{"type":"text"}}})");
  ASSERT_TRUE(text.is_ok());
  EXPECT_FALSE(text->grammar.has_value());
}

TEST(ResponsesRequest, StatefulFieldsAre400sNamingTheField) {
  EXPECT_EQ(answer(R"({"input":"x","store":false})").status, 200);
  for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"input":"x","store":true})", "store"},
           {R"({"input":"x","previous_response_id":"resp_1"})", "previous_response_id"},
           {R"({"input":"x","conversation":"conv_1"})", "conversation"},
           {R"({"input":"x","background":true})", "background"}}) {
    const HttpError e = answer(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.type, "invalid_request_error");
    EXPECT_EQ(e.param, field) << e.message;
    EXPECT_NE(e.message.find("stateless"), std::string::npos) << e.message;
  }
}

TEST(ResponsesRequest, BadInputIs400NamingTheResponsesField) {
  const std::string tools = std::string(R"("tools":[)") + kTool + "]";
  for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"model":"m"})", "input"},
           {R"({"input":5})", "input"},
           {R"({"input":[]})", "input"},
           {R"({"input":"x","tools":[{"type":"web_search"}]})", "tools[0].type"},
           {R"({"input":"x","tools":[{"type":"function","function":{"name":"f"}}]})",
            "tools[0].name"},
           {R"({"input":"x","tools":[{"type":"function","name":"bad name!"}]})", "tools[0].name"},
           {R"({"input":"x","tool_choice":{"type":"file_search"}})", "tool_choice.type"},
           {R"({"input":"x","tool_choice":{"type":"function","name":"nope"},)" + tools + "}",
            "tool_choice"},
           {R"({"input":"x","text":{"format":{"type":"xml"}}})", "text.format.type"},
           {R"({"input":"x","text":{"format":{"type":"json_schema","name":"a"}}})",
            "text.format.schema"},
           {R"({"input":"x","max_output_tokens":-1})", "max_output_tokens"},
           {R"({"input":"x","temperature":"hot"})", "temperature"},
           {R"({"input":"x","instructions":3})", "instructions"},
           {R"({"input":[{"role":"user","content":"a"},{"type":"item_reference","id":"x"}]})",
            "input[1].type"},
           {R"({"input":[{"role":"robot","content":"a"}]})", "input[0].role"},
           // An image part on a model without vision: the part is named.
           {R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"u"}]}]})",
            "input[0].content[0]"},
           {R"({"input":[{"role":"user","content":"a"},{"type":"function_call","name":"f",
               "arguments":"{}"}]})",
            "input[1].call_id"},
           // An output that answers no call: the chat path's history check, renamed.
           {R"({"input":[{"role":"user","content":"a"},{"type":"function_call_output",
               "call_id":"c9","output":"x"}]})",
            "input[1].call_id"},
           // A call to a function not offered: tool_calls[1] of the turn is input item 2.
           {R"({"input":[{"role":"user","content":"a"},
               {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{}"},
               {"type":"function_call","call_id":"c2","name":"other","arguments":"{}"}],)" +
                tools + "}",
            "input[2].name"}}) {
    const HttpError e = answer(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, field) << body << " -> " << e.message;
  }
  EXPECT_EQ(answer("{not json").code, "invalid_json");
}

TEST(ResponsesRequest, ChatErrorsAreRenamed) {
  ResponsesTranslation t;
  t.message_source = {-1, 0, 1, 3};
  auto named = [&](const std::string& m) {
    return to_responses_error(invalid_argument(m), t).message();
  };
  EXPECT_EQ(named("messages[0].content: x"), "instructions: x");
  EXPECT_EQ(named("messages[3].tool_call_id: x"), "input[3].call_id: x");
  EXPECT_EQ(named("messages[2].tool_calls[1].function.name: x"), "input[2].name: x");
  EXPECT_EQ(named("tools[2].function.parameters: x"), "tools[2].parameters: x");
  EXPECT_EQ(named("response_format.json_schema.schema: x"), "text.format.schema: x");
  EXPECT_EQ(named("max_tokens: x"), "max_output_tokens: x");
  EXPECT_EQ(named("temperature: x"), "temperature: x");
  EXPECT_EQ(to_responses_error(out_of_range("messages: too long"), t).code(),
            StatusCode::kOutOfRange);
}

// --- output ---

StepOutput step(const std::string& text, FinishReason f = FinishReason::kNone) {
  StepOutput o;
  o.text = text;
  o.token_ids = {1};
  o.finish = f;
  o.usage.prompt_tokens = 5;
  o.usage.completion_tokens = 3;
  o.usage.cached_prompt_tokens = 2;
  return o;
}

ResponseContext chat_ctx(bool tools) {
  ResponseContext c;
  c.kind = ApiKind::kChat;
  c.id = "req-1";
  c.model = "m";
  c.tools = tools;
  return c;
}

ResponsesContext responses_ctx() {
  ResponsesContext c;
  c.id = responses_id("req-1");
  c.model = "m";
  c.created = 42;
  c.echo["instructions"] = "sys";
  c.temperature = 0.0;
  return c;
}

TEST(ResponsesOutput, TextReplyIsOneMessageItem) {
  ResponseBuilder b(chat_ctx(false));
  b.accumulate(0, step("Hello"));
  b.accumulate(0, step(" there", FinishReason::kStop));
  const ordered r = response_from_chat(responses_ctx(), b.final_response(), b.total_usage());
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(r["status"], "completed");
  EXPECT_TRUE(r["incomplete_details"].is_null());
  EXPECT_EQ(r["instructions"], "sys");
  EXPECT_EQ(r["store"], false);
  ASSERT_EQ(r["output"].size(), 1u);
  const ordered& item = r["output"][0];
  EXPECT_EQ(item["type"], "message");
  EXPECT_EQ(item["role"], "assistant");
  EXPECT_EQ(item["status"], "completed");
  EXPECT_EQ(item["content"][0]["type"], "output_text");
  EXPECT_EQ(item["content"][0]["text"], "Hello there");
  EXPECT_EQ(r["usage"], ordered::parse(R"({"input_tokens":5,"input_tokens_details":
      {"cached_tokens":2,"cache_write_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},
      "total_tokens":8})"));
}

TEST(ResponsesOutput, LengthIsIncompleteWithMaxOutputTokens) {
  ResponseBuilder b(chat_ctx(false));
  b.accumulate(0, step("Hel", FinishReason::kLength));
  const ordered r = response_from_chat(responses_ctx(), b.final_response(), b.total_usage());
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"], ordered::parse(R"({"reason":"max_output_tokens"})"));
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "Hel");
}

constexpr const char* kCallReply =
    R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "get_weather", "arguments": {"city": "Rome"}}]})";

TEST(ResponsesOutput, ToolCallsAreFunctionCallItems) {
  ResponseBuilder b(chat_ctx(true));
  b.accumulate(0, step(kCallReply, FinishReason::kStop));
  const ordered r = response_from_chat(responses_ctx(), b.final_response(), b.total_usage());
  EXPECT_EQ(r["status"], "completed");
  ASSERT_EQ(r["output"].size(), 2u) << r.dump();
  const ordered& call = r["output"][0];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(call["call_id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(ordered::parse(call["arguments"].get<std::string>()),
            ordered::parse(R"({"city":"Paris"})"));
  EXPECT_NE(call["id"], r["output"][1]["id"]);
  EXPECT_NE(call["call_id"], r["output"][1]["call_id"]);
}

// The events a chat stream makes, through ResponsesEvents.
std::vector<ordered> stream(bool tools, const std::vector<StepOutput>& steps,
                            const Status& error = Status::ok()) {
  ResponseBuilder b(chat_ctx(tools));
  ResponsesEvents ev(responses_ctx());
  std::vector<ordered> out = ev.start();
  for (const StepOutput& s : steps) {
    for (const json& chunk : b.chunks_for(0, s)) {
      for (ordered& e : ev.on_chunk(chunk)) out.push_back(std::move(e));
    }
  }
  for (ordered& e : ev.finish(b.total_usage(), error)) out.push_back(std::move(e));
  return out;
}

std::vector<std::string> types(const std::vector<ordered>& events) {
  std::vector<std::string> t;
  for (const ordered& e : events) t.push_back(e["type"]);
  return t;
}

TEST(ResponsesEvents, TextStreamEventSequence) {
  const auto events = stream(false, {step("Hel"), step("lo"), step("!", FinishReason::kStop)});
  EXPECT_EQ(
      types(events),
      (std::vector<std::string>{
          "response.created", "response.in_progress", "response.output_item.added",
          "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
          "response.output_text.delta", "response.output_text.done", "response.content_part.done",
          "response.output_item.done", "response.completed"}));
  std::string deltas;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["sequence_number"], i);
    if (events[i]["type"] == "response.output_text.delta") {
      deltas += events[i]["delta"].get<std::string>();
      EXPECT_EQ(events[i]["item_id"], events[2]["item"]["id"]);
      EXPECT_EQ(events[i]["output_index"], 0);
      EXPECT_EQ(events[i]["content_index"], 0);
    }
  }
  EXPECT_EQ(deltas, "Hello!");
  EXPECT_EQ(events[0]["response"]["status"], "in_progress");
  EXPECT_EQ(events[7]["text"], "Hello!");
  const ordered& done = events.back()["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Hello!");
  EXPECT_EQ(done["usage"]["output_tokens"], 3);
  EXPECT_EQ(done["id"], events[0]["response"]["id"]);
}

TEST(ResponsesEvents, ToolCallStreamEventSequence) {
  const auto events = stream(true, {step(kCallReply, FinishReason::kStop)});
  std::vector<std::string> t = types(events);
  ASSERT_GE(t.size(), 8u);
  EXPECT_EQ(t[2], "response.output_item.added");
  EXPECT_EQ(events[2]["item"]["type"], "function_call");
  EXPECT_EQ(events[2]["item"]["arguments"], "");
  EXPECT_EQ(t.back(), "response.completed");
  std::string args[2];
  size_t calls_done = 0;
  for (const ordered& e : events) {
    if (e["type"] == "response.function_call_arguments.delta") {
      args[e["output_index"].get<size_t>()] += e["delta"].get<std::string>();
    }
    if (e["type"] == "response.function_call_arguments.done") {
      EXPECT_EQ(e["arguments"], args[e["output_index"].get<size_t>()]);
      EXPECT_EQ(e["name"], "get_weather");
      ++calls_done;
    }
  }
  EXPECT_EQ(calls_done, 2u);
  EXPECT_EQ(ordered::parse(args[1]), ordered::parse(R"({"city":"Rome"})"));
  const ordered& out = events.back()["response"]["output"];
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["type"], "function_call");
  EXPECT_EQ(out[0]["arguments"], args[0]);
  EXPECT_EQ(out[0]["status"], "completed");
  // The same items as the non-streaming object.
  ResponseBuilder b(chat_ctx(true));
  b.accumulate(0, step(kCallReply, FinishReason::kStop));
  EXPECT_EQ(out,
            response_from_chat(responses_ctx(), b.final_response(), b.total_usage())["output"]);
}

TEST(ResponsesEvents, CutShortIsIncompleteAndErrorIsFailed) {
  auto cut = stream(false, {step("Hel", FinishReason::kLength)});
  EXPECT_EQ(cut.back()["type"], "response.incomplete");
  EXPECT_EQ(cut.back()["response"]["incomplete_details"]["reason"], "max_output_tokens");
  auto empty = stream(false, {step("", FinishReason::kStop)});
  EXPECT_EQ(empty.back()["response"]["output"][0]["content"][0]["text"], "");
  auto failed = stream(false, {step("Hel")}, internal_error("boom"));
  EXPECT_EQ(failed.back()["type"], "response.failed");
  EXPECT_EQ(failed.back()["response"]["status"], "failed");
  EXPECT_EQ(failed.back()["response"]["error"]["message"], "boom");
}

TEST(ResponsesEvents, SseFramingNamesTheEvent) {
  EXPECT_EQ(responses_sse(ordered{{"type", "response.created"}, {"sequence_number", 0}}),
            "event: response.created\ndata: {\"type\":\"response.created\","
            "\"sequence_number\":0}\n\n");
}

}  // namespace
}  // namespace llmserve
