// The HTTP JSON reader and the gRPC proto reader fill the same neutral GenerationRequest: equal
// requests for equivalent inputs, the same error field for equivalent bad inputs.
#include <functional>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>

#include "server/grpc/proto_request.h"
#include "server/http/completion_request.h"
#include "server/http/http_error.h"
#include "tests/unit/server/fake_tokenizer.h"
#include "tests/unit/server/request_description.h"

namespace llmserve {
namespace {

RequestLimits limits() {
  RequestLimits l;
  l.vocab_size = testing::FakeTokenizer::kVocab;
  l.max_model_len = 64;
  l.model_name = "fake-model";
  return l;
}

// Every field, printed, so a mismatch shows which.
std::string describe(const GenerationRequest& r) {
  std::ostringstream o;
  const SamplingParams& p = r.params;
  o << "model=" << r.model << " prompts=";
  for (const auto& t : r.prompt_texts) o << "'" << t << "' ";
  test::describe_prompt_ids(o, r);
  o << "\n";
  test::describe_sampling(o, p);
  o << "\nmax_tokens_given=" << r.max_tokens_given << " stream=" << r.stream
    << " include_usage=" << r.include_usage << " priority=" << r.priority
    << " timeout=" << (r.timeout_seconds ? std::to_string(*r.timeout_seconds) : "-")
    << " user=" << r.user << " logprobs=" << (r.logprobs ? std::to_string(*r.logprobs) : "-")
    << " prompt_logprobs=" << (r.prompt_logprobs ? std::to_string(*r.prompt_logprobs) : "-")
    << " echo=" << r.echo << " echo_texts=" << r.echo_texts.size();
  o << "\ngrammar=";
  if (r.grammar) {
    o << grammar_kind_name(r.grammar->kind) << " field=" << r.grammar->field
      << " text=" << r.grammar->text << " choices=";
    for (const auto& c : r.grammar->choices) o << "'" << c << "',";
  } else {
    o << "none";
  }
  return o.str();
}

using ProtoFill = std::function<void(v1::GenerateRequest*)>;

struct Pair {
  std::string json;  // /v1/completions body
  ProtoFill proto;
};

Result<GenerationRequest> from_json(const std::string& body) {
  static testing::FakeTokenizer tok;
  return parse_completion_request(body, tok, limits());
}

Result<GenerationRequest> from_proto(const ProtoFill& fill) {
  static testing::FakeTokenizer tok;
  v1::GenerateRequest req;
  fill(&req);
  return parse_proto_request(req, tok, limits());
}

std::vector<Pair> equivalent_pairs() {
  using R = v1::GenerateRequest;
  return {
      {R"({"prompt":"abc"})", [](R* r) { r->set_prompt("abc"); }},
      {R"({"prompt":[1,2,3],"model":"fake-model"})",
       [](R* r) {
         for (int id : {1, 2, 3}) r->add_prompt_token_ids(id);
         r->set_model("fake-model");
       }},
      {R"({"prompt":"x","max_tokens":7,"min_tokens":2})",
       [](R* r) {
         r->set_prompt("x");
         r->set_max_tokens(7);
         r->set_min_tokens(2);
       }},
      {R"({"prompt":"x","temperature":0.25,"top_p":0.5,"top_k":40,"min_p":0.125})",
       [](R* r) {
         r->set_prompt("x");
         r->set_temperature(0.25f);
         r->set_top_p(0.5f);
         r->set_top_k(40);
         r->set_min_p(0.125f);
       }},
      {R"({"prompt":"x","presence_penalty":0.5,"frequency_penalty":-0.5,
           "repetition_penalty":1.25})",
       [](R* r) {
         r->set_prompt("x");
         r->set_presence_penalty(0.5f);
         r->set_frequency_penalty(-0.5f);
         r->set_repetition_penalty(1.25f);
       }},
      {R"({"prompt":"x","top_k":100000})",  // clamped to the vocabulary
       [](R* r) {
         r->set_prompt("x");
         r->set_top_k(100000);
       }},
      {R"({"prompt":"x","logit_bias":{"5":-100,"7":2.5},"seed":42})",
       [](R* r) {
         r->set_prompt("x");
         (*r->mutable_logit_bias())[5] = -100.0f;
         (*r->mutable_logit_bias())[7] = 2.5f;
         r->set_seed(42);
       }},
      {R"({"prompt":"x","stop":["\n","END"],"stop_token_ids":[258],"ignore_eos":true})",
       [](R* r) {
         r->set_prompt("x");
         r->add_stop("\n");
         r->add_stop("END");
         r->add_stop_token_ids(258);
         r->set_ignore_eos(true);
       }},
      {R"({"prompt":"x","include_stop_str_in_output":true,"skip_special_tokens":false})",
       [](R* r) {
         r->set_prompt("x");
         r->set_include_stop_str_in_output(true);
         r->set_skip_special_tokens(false);
       }},
      {R"({"prompt":"x","n":3,"logprobs":4,"priority":-2})",
       [](R* r) {
         r->set_prompt("x");
         r->set_n(3);
         r->set_logprobs(4);
         r->set_priority(-2);
       }},
      {R"({"prompt":[4,5],"max_tokens":0,"prompt_logprobs":2})",
       [](R* r) {
         r->add_prompt_token_ids(4);
         r->add_prompt_token_ids(5);
         r->set_max_tokens(0);
         r->set_prompt_logprobs(2);
       }},
      {R"({"prompt":"x","structured_outputs":{"json":{"type":"object"}}})",
       [](R* r) {
         r->set_prompt("x");
         r->mutable_structured_outputs()->set_json(R"({ "type" : "object" })");
       }},
      {R"({"prompt":"x","structured_outputs":{"regex":"[0-9]+"}})",
       [](R* r) {
         r->set_prompt("x");
         r->mutable_structured_outputs()->set_regex("[0-9]+");
       }},
      {R"({"prompt":"x","structured_outputs":{"choice":["yes","no"]}})",
       [](R* r) {
         r->set_prompt("x");
         auto* c = r->mutable_structured_outputs()->mutable_choice();
         c->add_choices("yes");
         c->add_choices("no");
       }},
      {R"({"prompt":"x","structured_outputs":{"grammar":"root ::= \"a\""}})",
       [](R* r) {
         r->set_prompt("x");
         r->mutable_structured_outputs()->set_grammar("root ::= \"a\"");
       }},
      {R"({"prompt":"x","structured_outputs":{"json_object":true}})",
       [](R* r) {
         r->set_prompt("x");
         r->mutable_structured_outputs()->set_json_object(true);
       }},
  };
}

TEST(RequestEquivalence, JsonAndProtoGiveEqualRequests) {
  const auto pairs = equivalent_pairs();
  ASSERT_GE(pairs.size(), 15u);
  for (const auto& pair : pairs) {
    SCOPED_TRACE(pair.json);
    auto a = from_json(pair.json);
    auto b = from_proto(pair.proto);
    ASSERT_TRUE(a.is_ok()) << a.status().to_string();
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_EQ(describe(*a), describe(*b));
  }
}

TEST(RequestEquivalence, EveryPairSetsSomethingBeyondThePrompt) {
  // Guards the table itself: a pair whose proto side ignores its fields would still compare
  // equal if the JSON side were ignored too.
  const auto pairs = equivalent_pairs();
  const std::string plain = describe(*from_json(R"({"prompt":"x"})"));
  for (size_t i = 2; i < pairs.size(); ++i) {
    SCOPED_TRACE(pairs[i].json);
    EXPECT_NE(describe(*from_proto(pairs[i].proto)), plain);
  }
}

struct BadPair {
  std::string json;  // "" = no JSON form (NaN and Inf do not exist in JSON)
  ProtoFill proto;
  std::string field;
};

TEST(RequestEquivalence, EquivalentBadInputsNameTheSameField) {
  using R = v1::GenerateRequest;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<BadPair> cases = {
      {R"({"prompt":"x","temperature":2.5})",
       [](R* r) {
         r->set_prompt("x");
         r->set_temperature(2.5f);
       },
       "temperature"},
      {"",
       [nan](R* r) {
         r->set_prompt("x");
         r->set_temperature(nan);
       },
       "temperature"},
      {"",
       [inf](R* r) {
         r->set_prompt("x");
         r->set_top_p(inf);
       },
       "top_p"},
      {"",
       [nan](R* r) {
         r->set_prompt("x");
         (*r->mutable_logit_bias())[3] = nan;
       },
       "logit_bias"},
      {R"({"prompt":"x","top_k":-2})",
       [](R* r) {
         r->set_prompt("x");
         r->set_top_k(-2);
       },
       "top_k"},
      {R"({"prompt":"x","n":17})",
       [](R* r) {
         r->set_prompt("x");
         r->set_n(17);
       },
       "n"},
      {R"({"prompt":"x","logprobs":21})",
       [](R* r) {
         r->set_prompt("x");
         r->set_logprobs(21);
       },
       "logprobs"},
      {R"({"prompt":"x","max_tokens":0})",
       [](R* r) {
         r->set_prompt("x");
         r->set_max_tokens(0);
       },
       "max_tokens"},
      {R"({"prompt":"x","min_tokens":5,"max_tokens":2})",
       [](R* r) {
         r->set_prompt("x");
         r->set_min_tokens(5);
         r->set_max_tokens(2);
       },
       "min_tokens"},
      {R"({"prompt":"x","logit_bias":{"300":1}})",
       [](R* r) {
         r->set_prompt("x");
         (*r->mutable_logit_bias())[300] = 1.0f;
       },
       "logit_bias"},
      {R"({"prompt":"x","stop":[""]})",
       [](R* r) {
         r->set_prompt("x");
         r->add_stop("");
       },
       "stop"},
      {R"({"prompt":"x","stop_token_ids":[300]})",
       [](R* r) {
         r->set_prompt("x");
         r->add_stop_token_ids(300);
       },
       "stop_token_ids"},
      {R"({"prompt":[300]})", [](R* r) { r->add_prompt_token_ids(300); }, "prompt"},
      {R"({"prompt":""})", [](R* r) { r->set_prompt(""); }, "prompt"},
      {R"({"prompt":"x","model":"gpt-4"})",
       [](R* r) {
         r->set_prompt("x");
         r->set_model("gpt-4");
       },
       "model"},
      {R"({"prompt":"x","priority":2000000})",
       [](R* r) {
         r->set_prompt("x");
         r->set_priority(2000000);
       },
       "priority"},
      {R"({"prompt":"x","structured_outputs":{"json":"[1,"}})",
       [](R* r) {
         r->set_prompt("x");
         r->mutable_structured_outputs()->set_json("[1,");
       },
       "structured_outputs.json"},
      {R"({"prompt":"x","structured_outputs":{"choice":[]}})",
       [](R* r) {
         r->set_prompt("x");
         r->mutable_structured_outputs()->mutable_choice();
       },
       "structured_outputs.choice"},
      {R"({"prompt":"x","structured_outputs":{"regex":")" + std::string(70000, 'a') + R"("}})",
       [](R* r) {
         r->set_prompt("x");
         r->mutable_structured_outputs()->set_regex(std::string(70000, 'a'));
       },
       "structured_outputs.regex"},
      {R"({"prompt":"x","structured_outputs":{"grammar":""}})",
       [](R* r) {
         r->set_prompt("x");
         r->mutable_structured_outputs()->set_grammar("");
       },
       "structured_outputs.grammar"},
      {R"({"prompt":"x","structured_outputs":{}})",
       [](R* r) {
         r->set_prompt("x");
         r->mutable_structured_outputs();
       },
       "structured_outputs"},
      {"",
       [](R* r) {
         r->set_prompt("x");
         r->add_prompt_token_ids(1);
       },
       "prompt"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json.substr(0, 100) + " / " + c.field);
    auto b = from_proto(c.proto);
    ASSERT_FALSE(b.is_ok());
    EXPECT_EQ(b.status().code(),
              c.field == "model" ? StatusCode::kNotFound : StatusCode::kInvalidArgument)
        << b.status().to_string();
    EXPECT_EQ(param_from_message(b.status().message()), c.field) << b.status().to_string();
    if (c.json.empty()) continue;
    auto a = from_json(c.json);
    ASSERT_FALSE(a.is_ok());
    EXPECT_EQ(a.status().code(), b.status().code());
    EXPECT_EQ(param_from_message(a.status().message()), c.field) << a.status().to_string();
  }
}

}  // namespace
}  // namespace llmserve
