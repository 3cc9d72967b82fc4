#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "engine/chat/jinja_value.h"

namespace llmserve {
namespace {

using ojson = nlohmann::ordered_json;

Result<std::string> render(std::string_view src, const ojson& ctx = ojson::object()) {
  LLMSERVE_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::parse(src));
  return t.render(ctx);
}

std::string ok(std::string_view src, const ojson& ctx = ojson::object()) {
  auto r = render(src, ctx);
  EXPECT_TRUE(r.is_ok()) << src << " -> " << r.status().to_string();
  return r.is_ok() ? *r : "<error>";
}

Status err(std::string_view src, const ojson& ctx = ojson::object()) {
  auto r = render(src, ctx);
  EXPECT_FALSE(r.is_ok()) << src << " rendered " << (r.is_ok() ? *r : "");
  return r.status();
}

TEST(JinjaInterpreter, PrintsPythonValues) {
  EXPECT_EQ(ok("{{ none }} {{ true }} {{ 1.0 }} {{ 1e-5 }} {{ [1, 'a', none] }} {{ {'k': (1,)} }}"),
            "None True 1.0 1e-05 [1, 'a', None] {'k': (1,)}");
  EXPECT_EQ(ok("{{ x }}|{{ x is defined }}|{{ x | default('d') }}"), "|False|d");
}

TEST(JinjaInterpreter, UndefinedErrorsWhereJinja2Does) {
  EXPECT_NE(err("{{ x.y }}").message().find("'x' is undefined"), std::string::npos);
  EXPECT_NE(err("{{ 'a' + x }}").message().find("'x' is undefined"), std::string::npos);
  EXPECT_NE(err("{{ d.missing.deeper }}", {{"d", ojson::object()}})
                .message()
                .find("has no attribute 'missing'"),
            std::string::npos);
  EXPECT_FALSE(render("{{ x.y is defined }}").is_ok());
  EXPECT_EQ(ok("{{ 'a' ~ x }}{% for i in x %}no{% endfor %}{{ x | length }}"), "a0");
}

TEST(JinjaInterpreter, RaiseExceptionCarriesMessageVerbatim) {
  Status s = err("{% if true %}{{ raise_exception('Roles must alternate!') }}{% endif %}");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "Roles must alternate!");
}

TEST(JinjaInterpreter, ErrorsNameLineAndColumn) {
  Status s = err("line one\n{{ 1 + 'a' }}");
  EXPECT_NE(s.message().find("line 2"), std::string::npos) << s.message();
  Status p = err("{% for x in y %}never closed");
  EXPECT_NE(p.message().find("endfor"), std::string::npos) << p.message();
  EXPECT_EQ(err("{% include 'x' %}").code(), StatusCode::kUnimplemented);
  EXPECT_NE(err("{{ x | no_such_filter }}").message().find("no filter named"), std::string::npos);
}

TEST(JinjaInterpreter, ScopingFollowsJinja2) {
  // Loop bodies get a fresh scope per iteration; namespaces carry state out of loops.
  EXPECT_EQ(ok("{% set x = 5 %}{% for i in [1,2] %}[{{ x }}]{% set x = i %}{% endfor %}{{ x }}"),
            "[5][5]5");
  EXPECT_EQ(ok("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% "
               "endfor %}{{ ns.n }}"),
            "6");
  EXPECT_EQ(ok("{% if true %}{% set y = 1 %}{% endif %}{{ y }}"), "1");
  EXPECT_EQ(ok("{% macro m(a, b=2) %}{{ a }}-{{ b }}-{{ g }}{% endmacro %}{% set g = 7 %}{{ m(1) "
               "}} {{ m(1, b=3) }}"),
            "1-2-7 1-3-7");
  EXPECT_EQ(
      ok("{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inner{% endcall %}"),
      "<inner>");
  EXPECT_EQ(ok("{% set b %}x{{ 1 + 1 }}{% endset %}{{ b }}"), "x2");
  EXPECT_EQ(ok("{% filter upper %}shout{% endfilter %}"), "SHOUT");
}

TEST(JinjaInterpreter, ImmutableSandboxRejectsMutation) {
  EXPECT_NE(err("{% set l = [] %}{{ l.append(1) }}").message().find("unsafe"), std::string::npos);
  EXPECT_FALSE(render("{% set ns = namespace(_x=1) %}").is_ok());
}

TEST(JinjaInterpreter, LimitsStopHostileTemplates) {
  EXPECT_EQ(err("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
                .code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(err("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(err("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s "
                "= ns.s ~ ns.s %}{% endfor %}")
                .code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(err("{{ 'x' * 100000000000 }}").code(), StatusCode::kResourceExhausted);
  // Refused before the repetition is built (fuzz_chat_template timed out on a 1 GB string).
  EXPECT_EQ(err("{{ 'x' * 1000000000 }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(err("{{ ([1, 2] * 10000000) | length }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ok("{{ ('ab' * 3) ~ ([1] * 3) | length }}"), "ababab3");
  // A namespace holding itself prints as Python does, and is freed (fuzz_chat_template: leak).
  EXPECT_EQ(ok("{% set ns = namespace(v=1) %}{% set ns.v = ns %}{{ ns }}|{{ [ns] }}|"
               "{{ ns.v.v.v is defined }}"),
            "<Namespace {'v': <Namespace {...}>}>|[<Namespace {'v': <Namespace {...}>}>]|True");
  // Empty sequences repeated 10^18 times are empty at once (fuzz_chat_template timed out on
  // "{{ '' * 1000100000000000 * -1000000 }}"); jinja2 gives the same.
  EXPECT_EQ(ok("{{ '' * 1000000000000000000 }}|{{ ([] * 1000000000000000000) | length }}"), "|0");
  EXPECT_EQ(err("{{ range(10000000) | length }}").code(), StatusCode::kResourceExhausted);
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_FALSE(render(deep).is_ok());
  std::string nested;
  for (int i = 0; i < 1000; ++i) nested += "{% if true %}";
  EXPECT_FALSE(render(nested).is_ok());
}

TEST(JinjaInterpreter, ContextKeyOrderReachesTojson) {
  ojson ordered = {{"tools", ojson::array({ojson{{"z", 1}, {"a", 2}}})}};
  EXPECT_EQ(ok("{{ tools[0] | tojson }}", ordered), "{\"z\": 1, \"a\": 2}");
  nlohmann::json sorted = {{"tools", nlohmann::json::array({nlohmann::json{{"z", 1}, {"a", 2}}})}};
  auto t = ChatTemplate::parse("{{ tools[0] | tojson }}");
  ASSERT_TRUE(t.is_ok());
  auto r = t->render(sorted);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, "{\"a\": 2, \"z\": 1}");
}

TEST(JinjaInterpreter, ApplyChatTemplateSetsVariables) {
  auto t = ChatTemplate::parse(
      "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}"
      "{% if add_generation_prompt %}A:{% endif %}{{ eos_token }}{{ extra_var }}");
  ASSERT_TRUE(t.is_ok());
  ChatTemplate copy = *t;  // templates are cheap to copy and immutable
  ojson msgs = ojson::array({ojson{{"role", "user"}, {"content", "hi"}}});
  auto r = apply_chat_template(copy, msgs, true, "<s>", "</s>", ojson{{"extra_var", "!"}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(*r, "<s>user:hi;A:</s>!");
  EXPECT_FALSE(apply_chat_template(copy, ojson::object(), true, "", "").is_ok());
}

TEST(JinjaInterpreter, StrftimeNowFormatsTheCurrentDate) {
  std::string year = ok("{{ strftime_now('%Y') }}");
  ASSERT_EQ(year.size(), 4u);
  EXPECT_GE(std::stoi(year), 2024);
  EXPECT_EQ(ok("{{ strftime_now('%d %b %Y') | length }}"), "11");
}

TEST(JinjaValue, FloatReprMatchesPython) {
  using jinja::format_float;
  EXPECT_EQ(format_float(1.0), "1.0");
  EXPECT_EQ(format_float(0.1), "0.1");
  EXPECT_EQ(format_float(1e16), "1e+16");
  EXPECT_EQ(format_float(1e15), "1000000000000000.0");
  EXPECT_EQ(format_float(0.0001), "0.0001");
  EXPECT_EQ(format_float(0.00001), "1e-05");
  EXPECT_EQ(format_float(-2.5e-10), "-2.5e-10");
  EXPECT_EQ(format_float(123456789.125), "123456789.125");
}

}  // namespace
}  // namespace llmserve
