// vllm.grpc.engine.GenerateRequest -> GenerationRequest (server/grpc/vllm_request.h). The
// oracle is the HTTP /v1/completions reader: a VllmEngine request and the equivalent JSON body
// must give the same engine request. Then the proto's own rules (zeros as unset, the room left
// for an unset max_tokens, truncation) and the errors, each naming its field.
#include "server/grpc/vllm_request.h"

#include <sstream>

#include <gtest/gtest.h>

#include "server/http/completion_request.h"
#include "tests/unit/server/fake_tokenizer.h"
#include "tests/unit/server/request_description.h"

namespace llmserve {
namespace {

namespace vpb = ::vllm::grpc::engine;
using testing::FakeTokenizer;

RequestLimits vllm_limits() {
  RequestLimits l;
  l.vocab_size = FakeTokenizer::kVocab;
  l.max_model_len = 64;
  l.model_name = "fake-model";
  return l;
}

const FakeTokenizer& tok() {
  static FakeTokenizer t;
  return t;
}

// What reaches the engine, printed (grammar by kind and content, not by field name).
std::string describe_request(const GenerationRequest& r) {
  std::ostringstream o;
  const SamplingParams& p = r.params;
  test::describe_prompt_ids(o, r);
  test::describe_sampling(o, p);
  o << " stream=" << r.stream << " grammar=";
  if (r.grammar) {
    o << grammar_kind_name(r.grammar->kind) << " text=" << r.grammar->text << " choices=";
    for (const auto& c : r.grammar->choices) o << "'" << c << "',";
  } else {
    o << "none";
  }
  return o.str();
}

Result<GenerationRequest> from_vllm(const vpb::GenerateRequest& r,
                                    const RequestLimits& l = vllm_limits()) {
  return parse_vllm_request(r, tok(), l);
}

vpb::GenerateRequest tokens(std::initializer_list<uint32_t> ids) {
  vpb::GenerateRequest r;
  r.set_request_id("req-1");
  for (uint32_t id : ids) r.mutable_tokenized()->add_input_ids(id);
  r.mutable_sampling_params()->set_max_tokens(8);
  r.mutable_sampling_params()->set_skip_special_tokens(true);  // as the gateway sends it
  return r;
}

struct Case {
  std::string json;  // /v1/completions body
  std::function<void(vpb::GenerateRequest*)> fill;
};

TEST(VllmRequest, EqualsTheHttpReaderForEquivalentRequests) {
  using R = vpb::GenerateRequest;
  auto sp = [](R* r) { return r->mutable_sampling_params(); };
  const std::vector<Case> cases = {
      {R"({"prompt":[1,2,3],"max_tokens":8})", [](R*) {}},
      {R"({"prompt":"abc","max_tokens":8})",
       [](R* r) {
         r->clear_tokenized();
         r->set_text("abc");
       }},
      {R"({"prompt":[1,2,3],"max_tokens":7,"min_tokens":2,"stream":true})",
       [&](R* r) {
         sp(r)->set_max_tokens(7);
         sp(r)->set_min_tokens(2);
         r->set_stream(true);
       }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"temperature":0.25,"top_p":0.5,"top_k":40,
           "min_p":0.125})",
       [&](R* r) {
         sp(r)->set_temperature(0.25f);
         sp(r)->set_top_p(0.5f);
         sp(r)->set_top_k(40);
         sp(r)->set_min_p(0.125f);
       }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"temperature":0})",
       [&](R* r) { sp(r)->set_temperature(0.0f); }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"presence_penalty":0.5,"frequency_penalty":-0.5,
           "repetition_penalty":1.25})",
       [&](R* r) {
         sp(r)->set_presence_penalty(0.5f);
         sp(r)->set_frequency_penalty(-0.5f);
         sp(r)->set_repetition_penalty(1.25f);
       }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"logit_bias":{"5":-100,"7":2.5},"seed":-3})",
       [&](R* r) {
         (*sp(r)->mutable_logit_bias())[5] = -100.0f;
         (*sp(r)->mutable_logit_bias())[7] = 2.5f;
         sp(r)->set_seed(-3);
       }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"stop":["\n","END"],"stop_token_ids":[258],
           "ignore_eos":true,"include_stop_str_in_output":true})",
       [&](R* r) {
         sp(r)->add_stop("\n");
         sp(r)->add_stop("END");
         sp(r)->add_stop_token_ids(258);
         sp(r)->set_ignore_eos(true);
         sp(r)->set_include_stop_str_in_output(true);
       }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"skip_special_tokens":false})",
       [&](R* r) { sp(r)->set_skip_special_tokens(false); }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"n":3,"logprobs":4,"prompt_logprobs":2})",
       [&](R* r) {
         sp(r)->set_n(3);
         sp(r)->set_logprobs(4);
         sp(r)->set_prompt_logprobs(2);
       }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"structured_outputs":{"json":{"type":"object"}}})",
       [&](R* r) { sp(r)->set_json_schema(R"({ "type" : "object" })"); }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"structured_outputs":{"regex":"[0-9]+"}})",
       [&](R* r) { sp(r)->set_regex("[0-9]+"); }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"structured_outputs":{"choice":["yes","no"]}})",
       [&](R* r) {
         sp(r)->mutable_choice()->add_choices("yes");
         sp(r)->mutable_choice()->add_choices("no");
       }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"structured_outputs":{"grammar":"root ::= \"a\""}})",
       [&](R* r) { sp(r)->set_grammar("root ::= \"a\""); }},
      {R"({"prompt":[1,2,3],"max_tokens":8,"structured_outputs":{"json_object":true}})",
       [&](R* r) { sp(r)->set_json_object(true); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    vpb::GenerateRequest r = tokens({1, 2, 3});
    c.fill(&r);
    auto a = parse_completion_request(c.json, tok(), vllm_limits());
    auto b = from_vllm(r);
    ASSERT_TRUE(a.is_ok()) << a.status().to_string();
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_EQ(describe_request(*a), describe_request(*b));
  }
}

TEST(VllmRequest, ProtoZerosAreUnsetAndTheModelDefaultsApply) {
  RequestLimits l = vllm_limits();
  l.default_sampling.temperature = 0.5;
  l.default_sampling.top_p = 0.75;
  l.default_sampling.top_k = 7;
  vpb::GenerateRequest r = tokens({1, 2});  // top_p, top_k, min_p, penalties, n all 0
  auto got = from_vllm(r, l);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_FLOAT_EQ(got->params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(got->params.top_p, 0.75f);
  EXPECT_EQ(got->params.top_k, 7);
  EXPECT_FLOAT_EQ(got->params.repetition_penalty, 1.0f);
  EXPECT_EQ(got->params.n, 1);
  // Explicit values win over the defaults.
  r.mutable_sampling_params()->set_temperature(0.0f);
  r.mutable_sampling_params()->set_top_k(3);
  got = from_vllm(r, l);
  ASSERT_TRUE(got.is_ok());
  EXPECT_FLOAT_EQ(got->params.temperature, 0.0f);
  EXPECT_EQ(got->params.top_k, 3);
}

TEST(VllmRequest, UnsetMaxTokensIsTheRoomLeftInTheContext) {
  vpb::GenerateRequest r = tokens({1, 2, 3, 4});
  r.mutable_sampling_params()->clear_max_tokens();
  auto got = from_vllm(r);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->params.max_tokens, 64 - 4);
}

TEST(VllmRequest, TruncatePromptTokensKeepsTheLastOnes) {
  vpb::GenerateRequest r = tokens({10, 11, 12, 13, 14});
  r.mutable_sampling_params()->set_truncate_prompt_tokens(2);
  auto got = from_vllm(r);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->prompt_token_ids.front(), (std::vector<int32_t>{13, 14}));
  // A prompt over the context fits once truncated; -1 truncates to the context itself.
  vpb::GenerateRequest big;
  for (uint32_t i = 0; i < 100; ++i) big.mutable_tokenized()->add_input_ids(i % 200);
  big.mutable_sampling_params()->set_max_tokens(1);
  EXPECT_EQ(from_vllm(big).status().code(), StatusCode::kOutOfRange);
  big.mutable_sampling_params()->set_truncate_prompt_tokens(63);
  auto fit = from_vllm(big);
  ASSERT_TRUE(fit.is_ok()) << fit.status().to_string();
  EXPECT_EQ(fit->prompt_token_ids.front().size(), 63u);
  EXPECT_EQ(fit->prompt_token_ids.front().front(), 37);
  big.mutable_sampling_params()->set_truncate_prompt_tokens(-1);
  auto whole = from_vllm(big);
  ASSERT_EQ(whole.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(whole.status().message().find("64 in the prompt"), std::string::npos)
      << whole.status().message();
}

TEST(VllmRequest, StructuralTagIsKeptAsCompactJson) {
  vpb::GenerateRequest r = tokens({1});
  r.mutable_sampling_params()->set_structural_tag(
      R"({"type": "structural_tag", "format": {"type": "const_string", "value": "hi"}})");
  auto got = from_vllm(r);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_TRUE(got->grammar);
  EXPECT_EQ(got->grammar->kind, GrammarKind::kStructuralTag);
  EXPECT_EQ(got->grammar->text,
            R"({"format":{"type":"const_string","value":"hi"},"type":"structural_tag"})");
}

TEST(VllmRequest, LegacyStructuralTagBecomesTriggeredTags) {
  vpb::GenerateRequest r = tokens({1});
  r.mutable_sampling_params()->set_structural_tag(
      R"({"structures": [{"begin": "<f>", "schema": {"type": "object"}, "end": "</f>"}],
          "triggers": ["<f>"]})");
  auto got = from_vllm(r);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->grammar->text,
            R"({"format":{"tags":[{"begin":"<f>","content":{"json_schema":{"type":"object"},)"
            R"("type":"json_schema"},"end":"</f>","type":"tag"}],"triggers":["<f>"],)"
            R"("type":"triggered_tags"},"type":"structural_tag"})");
}

// Each bad request: the status code and the field its message starts with.
TEST(VllmRequest, ErrorsNameTheField) {
  struct Bad {
    std::function<void(vpb::GenerateRequest*)> fill;
    StatusCode code;
    std::string field;
  };
  using R = vpb::GenerateRequest;
  const std::vector<Bad> bad = {
      {[](R* r) { r->clear_tokenized(); }, StatusCode::kInvalidArgument, "tokenized"},
      {[](R* r) { r->mutable_tokenized()->clear_input_ids(); }, StatusCode::kInvalidArgument,
       "tokenized.input_ids"},
      {[](R* r) { r->mutable_tokenized()->add_input_ids(300); }, StatusCode::kInvalidArgument,
       "tokenized.input_ids"},
      {[](R* r) { r->mutable_tokenized()->add_input_ids(4000000000u); },
       StatusCode::kInvalidArgument, "tokenized.input_ids"},
      {[](R* r) { r->mutable_mm_inputs(); }, StatusCode::kInvalidArgument, "mm_inputs"},
      {[](R* r) { r->mutable_media_refs(); }, StatusCode::kInvalidArgument, "media_refs"},
      {[](R* r) { r->set_data_parallel_rank(1); }, StatusCode::kInvalidArgument,
       "data_parallel_rank"},
      {[](R* r) { r->set_kv_transfer_params_json("[1]"); }, StatusCode::kInvalidArgument,
       "kv_transfer_params_json"},
      {[](R* r) { r->mutable_sampling_params()->set_logprobs(-1); }, StatusCode::kInvalidArgument,
       "sampling_params.logprobs"},
      {[](R* r) { r->mutable_sampling_params()->set_prompt_logprobs(-1); },
       StatusCode::kInvalidArgument, "sampling_params.prompt_logprobs"},
      {[](R* r) { r->mutable_sampling_params()->set_truncate_prompt_tokens(0); },
       StatusCode::kInvalidArgument, "sampling_params.truncate_prompt_tokens"},
      {[](R* r) { r->mutable_sampling_params()->set_max_tokens(3000000000u); },
       StatusCode::kInvalidArgument, "sampling_params.max_tokens"},
      {[](R* r) { r->mutable_sampling_params()->set_max_tokens(100); }, StatusCode::kOutOfRange,
       "prompt"},
      {[](R* r) { r->mutable_sampling_params()->set_temperature(3.0f); },
       StatusCode::kInvalidArgument, "temperature"},
      {[](R* r) { r->mutable_sampling_params()->set_top_p(1.5f); }, StatusCode::kInvalidArgument,
       "top_p"},
      {[](R* r) { r->mutable_sampling_params()->set_n(100); }, StatusCode::kInvalidArgument, "n"},
      {[](R* r) { r->mutable_sampling_params()->add_stop_token_ids(999); },
       StatusCode::kInvalidArgument, "stop_token_ids"},
      {[](R* r) { r->mutable_sampling_params()->set_json_object(false); },
       StatusCode::kInvalidArgument, "sampling_params.json_object"},
      {[](R* r) { r->mutable_sampling_params()->set_json_schema("{not json"); },
       StatusCode::kInvalidArgument, "sampling_params.json_schema"},
      {[](R* r) { r->mutable_sampling_params()->set_structural_tag("[]"); },
       StatusCode::kInvalidArgument, "sampling_params.structural_tag"},
      {[](R* r) { r->mutable_sampling_params()->mutable_choice(); }, StatusCode::kInvalidArgument,
       "sampling_params.choice"},
      {[](R* r) { r->mutable_sampling_params()->set_regex(""); }, StatusCode::kInvalidArgument,
       "sampling_params.regex"},
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i) + ": " + bad[i].field);
    vpb::GenerateRequest r = tokens({1, 2, 3});
    bad[i].fill(&r);
    auto got = from_vllm(r);
    ASSERT_FALSE(got.is_ok());
    EXPECT_EQ(got.status().code(), bad[i].code) << got.status().to_string();
    EXPECT_EQ(got.status().message().rfind(bad[i].field + ": ", 0), 0u) << got.status().message();
  }
}

}  // namespace
}  // namespace llmserve
