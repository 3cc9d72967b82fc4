// A table of bad request bodies: each must map to the listed HTTP status with OpenAI's error
// shape, and, where the field is known, the right `param`.
#include <gtest/gtest.h>

#include "server/http/chat_request.h"
#include "server/http/completion_request.h"
#include "server/http/http_error.h"
#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve {
namespace {

struct BadCase {
  char api;  // 'c' completions, 'h' chat
  std::string body;
  int status;
  std::string param;  // "" = not checked
};

const std::string kMsg = R"("messages":[{"role":"user","content":"hi"}])";

std::string chat(const std::string& extra) {
  return "{" + kMsg + "," + extra + "}";
}
std::string cmpl(const std::string& extra) {
  return R"({"prompt":"hi",)" + extra + "}";
}

std::vector<BadCase> cases() {
  std::vector<BadCase> v = {
      // malformed JSON / wrong top-level type
      {'c', "", 400, ""},
      {'c', "{", 400, ""},
      {'c', "{\"prompt\":", 400, ""},
      {'c', "{\"prompt\":\"x\",}", 400, ""},
      {'c', "[]", 400, ""},
      {'c', "\"prompt\"", 400, ""},
      {'c', "null", 400, ""},
      {'c', "42", 400, ""},
      {'c', "{'prompt':'x'}", 400, ""},
      {'c', "{\"prompt\":\"x\"} trailing", 400, ""},
      {'c', "{\"prompt\":\"\xff\xfe\"}", 400, ""},      // invalid UTF-8
      {'c', "{\"prompt\":\"\xc3\x28\"}", 400, ""},      // invalid UTF-8 continuation
      {'c', "{\"prompt\":\"\xed\xa0\x80\"}", 400, ""},  // UTF-8 surrogate
      {'h', "{", 400, ""},
      {'h', "[{\"role\":\"user\"}]", 400, ""},
      {'h', "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", 400, ""},
      // prompt
      {'c', "{}", 400, "prompt"},
      {'c', R"({"prompt":null})", 400, "prompt"},
      {'c', R"({"prompt":""})", 400, "prompt"},
      {'c', R"({"prompt":[]})", 400, "prompt"},
      {'c', R"({"prompt":5})", 400, "prompt"},
      {'c', R"({"prompt":true})", 400, "prompt"},
      {'c', R"({"prompt":{"a":1}})", 400, "prompt"},
      {'c', R"({"prompt":["a",1]})", 400, "prompt"},
      {'c', R"({"prompt":[1,"a"]})", 400, "prompt"},
      {'c', R"({"prompt":[-1]})", 400, "prompt"},
      {'c', R"({"prompt":[300]})", 400, "prompt"},
      {'c', R"({"prompt":[1.5]})", 400, "prompt"},
      {'c', R"({"prompt":[99999999999999]})", 400, "prompt"},
      {'c', R"({"prompt":[[1],[]]})", 400, "prompt"},
      {'c', R"({"prompt":[[1],2]})", 400, "prompt"},
      {'c', R"({"prompt":[[1],[-3]]})", 400, "prompt"},
      {'c', R"({"prompt":[null]})", 400, "prompt"},
      {'c', R"({"prompt":["a",""]})", 400, "prompt"},
      // unsupported features
      {'c', cmpl(R"("echo":true,"n":2)"), 400, "echo"},
      {'c', cmpl(R"("echo":"yes")"), 400, "echo"},
      {'h', chat(R"("echo":true)"), 400, "echo"},
      {'c', cmpl(R"("prompt_logprobs":21)"), 400, "prompt_logprobs"},
      {'c', cmpl(R"("prompt_logprobs":-1)"), 400, "prompt_logprobs"},
      {'c', cmpl(R"("prompt_logprobs":"2")"), 400, "prompt_logprobs"},
      {'c', cmpl(R"("prompt_logprobs":1,"stream":true)"), 400, "prompt_logprobs"},
      {'h', chat(R"("prompt_logprobs":50)"), 400, "prompt_logprobs"},
      {'h', chat(R"("max_tokens":0)"), 400, "max_tokens"},
      {'c', cmpl(R"("suffix":"tail")"), 400, "suffix"},
      {'c', cmpl(R"("suffix":3)"), 400, "suffix"},
      {'c', cmpl(R"("best_of":3)"), 400, "best_of"},
      {'h', chat(R"("tools":[{"type":"function"}])"), 400, "tools[0].function"},
      {'h', chat(R"("tools":"x")"), 400, "tools"},
      {'h', chat(R"("response_format":{"type":"xml"})"), 400, "response_format"},
      {'h', chat(R"("response_format":"json")"), 400, "response_format"},
      // model
      {'c', cmpl(R"("model":"gpt-4")"), 404, "model"},  // model_not_found
      {'c', cmpl(R"("model":5)"), 400, "model"},
      {'h', chat(R"("model":"other")"), 404, "model"},
      // max_tokens
      {'c', cmpl(R"("max_tokens":-1)"), 400, "max_tokens"},
      {'c', cmpl(R"("max_tokens":0)"), 400, "max_tokens"},
      {'c', cmpl(R"("max_tokens":"10")"), 400, "max_tokens"},
      {'c', cmpl(R"("max_tokens":1.5)"), 400, "max_tokens"},
      {'c', cmpl(R"("max_tokens":true)"), 400, "max_tokens"},
      {'c', cmpl(R"("max_tokens":1e30)"), 400, "max_tokens"},
      {'c', cmpl(R"("max_tokens":3000000000)"), 400, "max_tokens"},
      {'c', cmpl(R"("max_tokens":18446744073709551615)"), 400, "max_tokens"},
      {'c', cmpl(R"("max_tokens":100000)"), 400, "prompt"},  // context_length_exceeded
      {'h', chat(R"("max_completion_tokens":-5)"), 400, "max_completion_tokens"},
      {'h', chat(R"("max_tokens":100000)"), 400, "messages"},
      // temperature / top_p / top_k / min_p
      {'c', cmpl(R"("temperature":-0.1)"), 400, "temperature"},
      {'c', cmpl(R"("temperature":2.5)"), 400, "temperature"},
      {'c', cmpl(R"("temperature":"hot")"), 400, "temperature"},
      {'c', cmpl(R"("temperature":1e308)"), 400, "temperature"},
      {'c', cmpl(R"("temperature":[1])"), 400, "temperature"},
      {'c', cmpl(R"("top_p":0)"), 400, "top_p"},
      {'c', cmpl(R"("top_p":1.01)"), 400, "top_p"},
      {'c', cmpl(R"("top_p":-1)"), 400, "top_p"},
      {'c', cmpl(R"("top_p":"1")"), 400, "top_p"},
      {'c', cmpl(R"("top_k":-2)"), 400, "top_k"},
      {'c', cmpl(R"("top_k":0.5)"), 400, "top_k"},
      {'c', cmpl(R"("top_k":"5")"), 400, "top_k"},
      {'c', cmpl(R"("min_p":-0.1)"), 400, "min_p"},
      {'c', cmpl(R"("min_p":1.5)"), 400, "min_p"},
      // penalties
      {'c', cmpl(R"("presence_penalty":2.1)"), 400, "presence_penalty"},
      {'c', cmpl(R"("presence_penalty":-3)"), 400, "presence_penalty"},
      {'c', cmpl(R"("frequency_penalty":5)"), 400, "frequency_penalty"},
      {'c', cmpl(R"("frequency_penalty":"x")"), 400, "frequency_penalty"},
      {'c', cmpl(R"("repetition_penalty":0)"), 400, "repetition_penalty"},
      {'c', cmpl(R"("repetition_penalty":-1)"), 400, "repetition_penalty"},
      {'c', cmpl(R"("repetition_penalty":11)"), 400, "repetition_penalty"},
      // logit_bias
      {'c', cmpl(R"("logit_bias":[1,2])"), 400, "logit_bias"},
      {'c', cmpl(R"("logit_bias":{"abc":1})"), 400, "logit_bias"},
      {'c', cmpl(R"("logit_bias":{"-1":1})"), 400, "logit_bias"},
      {'c', cmpl(R"("logit_bias":{"300":1})"), 400, "logit_bias"},
      {'c', cmpl(R"("logit_bias":{"1.5":1})"), 400, "logit_bias"},
      {'c', cmpl(R"("logit_bias":{"":1})"), 400, "logit_bias"},
      {'c', cmpl(R"("logit_bias":{"99999999999999999999":1})"), 400, "logit_bias"},
      {'c', cmpl(R"("logit_bias":{"5":101})"), 400, "logit_bias"},
      {'c', cmpl(R"("logit_bias":{"5":-1000})"), 400, "logit_bias"},
      {'c', cmpl(R"("logit_bias":{"5":"x"})"), 400, "logit_bias"},
      {'c', cmpl(R"("logit_bias":"5")"), 400, "logit_bias"},
      // seed
      {'c', cmpl(R"("seed":"42")"), 400, "seed"},
      {'c', cmpl(R"("seed":1.5)"), 400, "seed"},
      // stop
      {'c', cmpl(R"("stop":5)"), 400, "stop"},
      {'c', cmpl(R"("stop":[1])"), 400, "stop"},
      {'c', cmpl(R"("stop":[""])"), 400, "stop"},
      {'c', cmpl(R"("stop":"")"), 400, "stop"},
      {'c', cmpl(R"("stop":{"a":1})"), 400, "stop"},
      {'c', cmpl(R"("stop":["a",null])"), 400, "stop"},
      {'c', cmpl(R"("stop_token_ids":[-1])"), 400, "stop_token_ids"},
      {'c', cmpl(R"("stop_token_ids":[300])"), 400, "stop_token_ids"},
      {'c', cmpl(R"("stop_token_ids":"1")"), 400, "stop_token_ids"},
      {'c', cmpl(R"("stop_token_ids":[1.5])"), 400, "stop_token_ids"},
      // flags and counts
      {'c', cmpl(R"("ignore_eos":"true")"), 400, "ignore_eos"},
      {'c', cmpl(R"("ignore_eos":1)"), 400, "ignore_eos"},
      {'c', cmpl(R"("min_tokens":-1)"), 400, "min_tokens"},
      {'c', cmpl(R"("min_tokens":5,"max_tokens":2)"), 400, "min_tokens"},
      {'c', cmpl(R"("n":0)"), 400, "n"},
      {'c', cmpl(R"("n":-1)"), 400, "n"},
      {'c', cmpl(R"("n":17)"), 400, "n"},
      {'c', cmpl(R"("n":1000000)"), 400, "n"},
      {'c', cmpl(R"("n":"2")"), 400, "n"},
      {'c', R"({"prompt":["a","b","c","d","e"],"n":16})", 400, "n"},
      {'c', cmpl(R"("logprobs":-1)"), 400, "logprobs"},
      {'c', cmpl(R"("logprobs":21)"), 400, "logprobs"},
      {'c', cmpl(R"("logprobs":true)"), 400, "logprobs"},
      {'c', cmpl(R"("logprobs":"3")"), 400, "logprobs"},
      {'h', chat(R"("logprobs":3)"), 400, "logprobs"},
      {'h', chat(R"("logprobs":true,"top_logprobs":21)"), 400, "top_logprobs"},
      {'h', chat(R"("logprobs":true,"top_logprobs":-1)"), 400, "top_logprobs"},
      {'h', chat(R"("top_logprobs":2)"), 400, "top_logprobs"},
      {'c', cmpl(R"("stream":"yes")"), 400, "stream"},
      {'c', cmpl(R"("stream":1)"), 400, "stream"},
      {'c', cmpl(R"("stream_options":{"include_usage":true})"), 400, "stream_options"},
      {'c', cmpl(R"("stream":true,"stream_options":true)"), 400, "stream_options"},
      {'c', cmpl(R"("stream":true,"stream_options":{"include_usage":"y"})"), 400,
       "stream_options.include_usage"},
      {'c', cmpl(R"("priority":"high")"), 400, "priority"},
      {'c', cmpl(R"("priority":1e12)"), 400, "priority"},
      {'c', cmpl(R"("timeout":0)"), 400, "timeout"},
      {'c', cmpl(R"("timeout":-5)"), 400, "timeout"},
      {'c', cmpl(R"("timeout":"10")"), 400, "timeout"},
      {'c', cmpl(R"("timeout":1e9)"), 400, "timeout"},
      {'c', cmpl(R"("user":5)"), 400, "user"},
      {'c', cmpl(R"("skip_special_tokens":"no")"), 400, "skip_special_tokens"},
      // chat messages
      {'h', "{}", 400, "messages"},
      {'h', R"({"messages":null})", 400, "messages"},
      {'h', R"({"messages":[]})", 400, "messages"},
      {'h', R"({"messages":"hi"})", 400, "messages"},
      {'h', R"({"messages":{"role":"user"}})", 400, "messages"},
      {'h', R"({"messages":[5]})", 400, "messages[0]"},
      {'h', R"({"messages":[{"content":"x"}]})", 400, "messages[0].role"},
      {'h', R"({"messages":[{"role":5,"content":"x"}]})", 400, "messages[0].role"},
      {'h', R"({"messages":[{"role":"wizard","content":"x"}]})", 400, "messages[0].role"},
      {'h', R"({"messages":[{"role":"","content":"x"}]})", 400, "messages[0].role"},
      {'h', R"({"messages":[{"role":"user"}]})", 400, "messages[0].content"},
      {'h', R"({"messages":[{"role":"user","content":null}]})", 400, "messages[0].content"},
      {'h', R"({"messages":[{"role":"user","content":5}]})", 400, "messages[0].content"},
      {'h', R"({"messages":[{"role":"user","content":{"text":"x"}}]})", 400, "messages[0].content"},
      {'h', R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})",
       400, "messages[0].content[0]"},
      {'h', R"({"messages":[{"role":"user","content":[{"text":"x"}]}]})", 400,
       "messages[0].content"},
      {'h', R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})", 400,
       "messages[0].content"},
      {'h', R"({"messages":[{"role":"user","content":["x"]}]})", 400, "messages[0].content"},
      {'h', R"({"messages":[{"role":"user","content":"a"},{"role":"bot","content":"b"}]})", 400,
       "messages[1].role"},
      {'h', R"({"messages":[{"role":"user","content":"a","name":5}]})", 400, "messages[0].name"},
      {'h', chat(R"("add_generation_prompt":"yes")"), 400, "add_generation_prompt"},
      {'h', chat(R"("temperature":-1)"), 400, "temperature"},
      {'h', chat(R"("n":0)"), 400, "n"},
      {'h', chat(R"("stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"])"),
       400, "stop"},
  };
  // Prompt over the context (64 tokens).
  v.push_back({'c', R"({"prompt":")" + std::string(64, 'a') + R"("})", 400, "prompt"});
  v.push_back({'c', R"({"prompt":")" + std::string(5000, 'a') + R"("})", 400, "prompt"});
  v.push_back({'h',
               R"({"messages":[{"role":"user","content":")" + std::string(200, 'a') + R"("}]})",
               400, "messages"});
  // Too many stop strings, one too long, too many stop token ids, logit_bias entries.
  std::string stops = "[";
  for (int i = 0; i < 17; ++i)
    stops += std::string(i ? "," : "") + "\"s" + std::to_string(i) + "\"";
  v.push_back({'c', cmpl("\"stop\":" + stops + "]"), 400, "stop"});
  v.push_back({'c', cmpl("\"stop\":\"" + std::string(600, 'x') + "\""), 400, "stop"});
  std::string ids = "[";
  for (int i = 0; i < 300; ++i) ids += std::string(i ? "," : "") + "1";
  v.push_back({'c', cmpl("\"stop_token_ids\":" + ids + "]"), 400, "stop_token_ids"});
  std::string prompts = "[";
  for (int i = 0; i < 70; ++i) prompts += std::string(i ? "," : "") + "\"p\"";
  v.push_back({'c', "{\"prompt\":" + prompts + "]}", 400, ""});
  return v;
}

Result<std::string> bad_request_chatml(const nlohmann::json& messages, bool) {
  std::string out;
  for (const auto& m : messages)
    out += m["role"].get<std::string>() + m["content"].get<std::string>();
  return out;
}

TEST(BadRequests, EachGetsTheRightStatusAndErrorShape) {
  testing::FakeTokenizer tok;
  RequestLimits limits;
  limits.vocab_size = testing::FakeTokenizer::kVocab;
  limits.max_model_len = 64;
  limits.model_name = "fake-model";
  const auto table = cases();
  ASSERT_GE(table.size(), 100u);
  for (size_t i = 0; i < table.size(); ++i) {
    const BadCase& c = table[i];
    SCOPED_TRACE("case " + std::to_string(i) + ": " + c.body.substr(0, 120));
    Status st;
    if (c.api == 'c') {
      st = parse_completion_request(c.body, tok, limits).status();
    } else {
      st = parse_chat_request(c.body, tok, bad_request_chatml, limits).status();
    }
    ASSERT_FALSE(st.is_ok());
    const HttpError e = http_error_from_status(st);
    EXPECT_EQ(e.status, c.status) << st.to_string();
    if (!c.param.empty()) {
      EXPECT_EQ(e.param, c.param) << st.to_string();
    }
    const auto body = nlohmann::json::parse(error_body(e));
    ASSERT_TRUE(body.contains("error"));
    const auto& err = body["error"];
    EXPECT_TRUE(err["message"].is_string());
    EXPECT_FALSE(err["message"].get<std::string>().empty());
    EXPECT_EQ(err["type"], "invalid_request_error");
    EXPECT_TRUE(err["param"].is_string() || err["param"].is_null());
    EXPECT_TRUE(err["code"].is_string() || err["code"].is_null());
  }
}

TEST(HttpErrorMapping, StatusCodesAndRetryAfter) {
  EXPECT_EQ(http_error_from_status(resource_exhausted("full"), 2).status, 429);
  EXPECT_EQ(http_error_from_status(resource_exhausted("full"), 2).retry_after_seconds, 2);
  EXPECT_EQ(http_error_from_status(unavailable("draining")).status, 503);
  EXPECT_GT(http_error_from_status(unavailable("draining")).retry_after_seconds, 0);
  EXPECT_EQ(http_error_from_status(not_found("x")).status, 404);
  EXPECT_EQ(http_error_from_status(internal_error("x")).status, 500);
  EXPECT_EQ(http_error_from_status(out_of_range("ctx")).code, "context_length_exceeded");
  EXPECT_EQ(http_error_from_status(not_found("model: nope")).code, "model_not_found");
  EXPECT_EQ(http_error_from_status(not_found("model: nope")).status, 404);
  EXPECT_EQ(http_error_from_status(not_found("no such request")).code, "not_found");
  EXPECT_EQ(http_error_from_status(out_of_range("prompt: too long")).param, "prompt");
  EXPECT_EQ(http_error_from_status(invalid_argument("model: must be a string")).code,
            "invalid_value");
  const HttpError dup = http_error_from_status(already_exists("X-Request-Id: in use"));
  EXPECT_EQ(dup.status, 409);
  EXPECT_EQ(dup.type, "invalid_request_error");
  EXPECT_EQ(dup.code, "duplicate_request_id");
  EXPECT_EQ(dup.param, "X-Request-Id");
  EXPECT_EQ(unauthorized_error().status, 401);
  EXPECT_EQ(unauthorized_error().code, "invalid_api_key");
  EXPECT_EQ(payload_too_large_error(10).status, 413);
  EXPECT_EQ(param_from_message("messages[0].role: bad"), "messages[0].role");
  EXPECT_EQ(param_from_message("request body is not valid JSON: x"), "");
  EXPECT_EQ(param_from_message("no colon here"), "");
}

}  // namespace
}  // namespace llmserve
