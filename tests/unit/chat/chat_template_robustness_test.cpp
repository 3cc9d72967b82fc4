// Random, truncated and mutated templates (seeded) must parse or render to a value or an error:
// never crash, hang or allocate without bound.
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"

namespace llmserve {
namespace {

using ojson = nlohmann::ordered_json;

std::string read_template_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const ojson& context() {
  static const ojson ctx = {
      {"messages", ojson::array({ojson{{"role", "system"}, {"content", "sys"}},
                                 ojson{{"role", "user"}, {"content", "hi"}},
                                 ojson{{"role", "assistant"}, {"content", "yo"}},
                                 ojson{{"role", "user"}, {"content", "again"}}})},
      {"add_generation_prompt", true},
      {"bos_token", "<s>"},
      {"eos_token", "</s>"},
      {"tools", ojson::array({ojson{{"type", "function"}, {"function", ojson{{"name", "f"}}}}})}};
  return ctx;
}

int try_render(const std::string& src) {
  auto t = ChatTemplate::parse(src);
  if (!t.is_ok()) {
    EXPECT_FALSE(t.status().message().empty());
    return 0;
  }
  auto r = t->render(context());
  if (!r.is_ok()) {
    EXPECT_FALSE(r.status().message().empty());
  }
  return r.is_ok() ? 1 : 0;
}

std::vector<std::string> real_templates() {
  std::vector<std::string> out;
  for (const char* name : {"llama3_1", "qwen2_5", "smollm2", "mistral_v0_1", "features_expr",
                           "features_filters", "features_loops"}) {
    out.push_back(read_template_file(std::string(LLMSERVE_FIXTURES_DIR) + "/chat/templates/" +
                                     name + ".jinja"));
    EXPECT_FALSE(out.back().empty()) << name;
  }
  return out;
}

TEST(ChatTemplateRobustness, TruncatedTemplates) {
  int rendered = 0, tried = 0;
  for (const auto& src : real_templates()) {
    size_t stride = std::max<size_t>(1, src.size() / 300);
    for (size_t n = 0; n < src.size(); n += stride) {
      rendered += try_render(src.substr(0, n));
      ++tried;
    }
  }
  EXPECT_GT(tried, 1500);
  EXPECT_GT(rendered, 0);
}

TEST(ChatTemplateRobustness, MutatedTemplates) {
  std::mt19937 rng(1234);
  const std::string alphabet = "{}%#-+()[]'\".,|~:=!<>*/ \n abcdefxyz019_";
  auto sources = real_templates();
  for (int i = 0; i < 1500; ++i) {
    std::string src = sources[rng() % sources.size()];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits && !src.empty(); ++k) {
      size_t at = rng() % src.size();
      switch (rng() % 3) {
        case 0:
          src[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          src.erase(at, 1 + rng() % 8);
          break;
        default:
          src.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
    }
    try_render(src);
  }
}

TEST(ChatTemplateRobustness, RandomTokenSoup) {
  std::mt19937 rng(99);
  const char* pieces[] = {"{{",
                          "}}",
                          "{%",
                          "%}",
                          "{#",
                          "#}",
                          "-",
                          "+",
                          " for ",
                          " in ",
                          " if ",
                          " else ",
                          " endif ",
                          " endfor ",
                          " set ",
                          " x ",
                          " messages ",
                          " loop.",
                          "index",
                          "(",
                          ")",
                          "[",
                          "]",
                          "{",
                          "}",
                          "'s'",
                          "\"t\"",
                          "1",
                          "2.5",
                          "|",
                          " trim ",
                          " tojson",
                          ",",
                          ":",
                          "=",
                          " == ",
                          " is ",
                          " not ",
                          " defined ",
                          " macro ",
                          " endmacro ",
                          " ns ",
                          " namespace()",
                          "~",
                          "*",
                          "**",
                          "//",
                          "range(9)",
                          ".",
                          " raise_exception('e') ",
                          "\n",
                          "text",
                          " and ",
                          " or "};
  const size_t n_pieces = sizeof(pieces) / sizeof(pieces[0]);
  for (int i = 0; i < 3000; ++i) {
    std::string src;
    int len = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < len; ++k) src += pieces[rng() % n_pieces];
    try_render(src);
  }
}

TEST(ChatTemplateRobustness, RandomBytes) {
  std::mt19937 rng(7);
  for (int i = 0; i < 1000; ++i) {
    std::string src(rng() % 64, '\0');
    for (char& c : src) c = static_cast<char>(rng() % 256);
    try_render(src);
    try_render("{{ " + src + " }}");
    try_render("{% if " + src + " %}x{% endif %}");
  }
}

}  // namespace
}  // namespace llmserve
