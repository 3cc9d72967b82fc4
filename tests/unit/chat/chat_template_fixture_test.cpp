// Oracle test: every (template, conversation) pair rendered by Python jinja2 with Hugging Face's
// settings (tests/reference/make_chat_fixtures.py) must render to identical text here, and the
// pairs jinja2 rejects must fail here too (raise_exception with the same message).
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"

namespace llmserve {
namespace {

using ojson = nlohmann::ordered_json;
const std::string kDir = std::string(LLMSERVE_FIXTURES_DIR) + "/chat/";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ChatTemplateFixture, MatchesJinja2OnEveryCase) {
  std::ifstream in(kDir + "chat_cases.json");
  ASSERT_TRUE(in.good()) << "missing " << kDir << "chat_cases.json";
  ojson fixture = ojson::parse(in);
  std::map<std::string, ChatTemplate> templates;
  int rendered = 0, errors = 0, failures = 0;
  for (const auto& c : fixture["cases"]) {
    std::string tname = c["template"].get<std::string>();
    if (!templates.count(tname)) {
      auto t = ChatTemplate::parse(read_file(kDir + "templates/" + tname));
      ASSERT_TRUE(t.is_ok()) << tname << ": " << t.status().to_string();
      templates.emplace(tname, std::move(t).value());
    }
    std::string cname = c["conversation"].get<std::string>();
    const ojson& conv = fixture["conversations"][cname];
    auto out = apply_chat_template(
        templates.at(tname), conv["messages"], c["add_generation_prompt"].get<bool>(),
        c["bos_token"].get<std::string>(), c["eos_token"].get<std::string>(), conv["extra"]);
    std::string label = tname + " x " + cname;
    if (c.contains("expected")) {
      ++rendered;
      if (!out.is_ok()) {
        ++failures;
        ADD_FAILURE() << label << ": unexpected error " << out.status().to_string();
      } else if (*out != c["expected"].get<std::string>()) {
        ++failures;
        EXPECT_EQ(*out, c["expected"].get<std::string>()) << label;
      }
    } else {
      ++errors;
      if (out.is_ok()) {
        ++failures;
        ADD_FAILURE() << label << ": rendered but jinja2 raised " << c["error_type"] << ": "
                      << c["error"] << "\n got: " << *out;
      } else if (c["error_type"] == "TemplateError") {
        EXPECT_EQ(out.status().message(), c["error"].get<std::string>()) << label;
      }
    }
  }
  EXPECT_GE(rendered + errors, 800);
  EXPECT_GE(fixture["conversations"].size(), 40u);
  EXPECT_EQ(failures, 0) << "of " << rendered << " rendered and " << errors << " error cases";
}

TEST(ChatTemplateFixture, RealTemplatesAreStored) {
  for (const char* name : {"smollm2", "chatml", "llama3", "llama3_1", "mistral_v0_1", "qwen2",
                           "qwen2_5", "qwen3", "qwq", "deepseek_r1_distill_qwen", "gemma3_it",
                           "phi3_5_mini", "phi4_mini", "mistral_nemo", "mixtral_instruct"}) {
    auto t = ChatTemplate::parse(read_file(kDir + "templates/" + name + ".jinja"));
    EXPECT_TRUE(t.is_ok()) << name << ": " << t.status().to_string();
  }
}

}  // namespace
}  // namespace llmserve
