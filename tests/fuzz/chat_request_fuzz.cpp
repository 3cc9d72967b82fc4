// POST /v1/chat/completions: arbitrary body bytes -> parse_chat_request with the SmolLM2 chat
// template (parsed once from the fixtures) and the byte tokenizer (vocab 300).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "engine/chat/chat_template.h"
#include "server/http/chat_request.h"
#include "tests/fuzz/request_fuzz_checks.h"
#include "tests/unit/server/fake_tokenizer.h"

namespace {

llmserve::ChatTemplate load_template() {
  std::ifstream in(std::string(LLMSERVE_FIXTURES_DIR) + "/chat/templates/smollm2.jinja");
  std::stringstream ss;
  ss << in.rdbuf();
  auto t = llmserve::ChatTemplate::parse(ss.str());
  if (!in || !t.is_ok()) std::abort();  // fixture missing: the harness is broken
  return std::move(*t);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const llmserve::testing::FakeTokenizer tok;
  static const llmserve::RequestLimits limits = llmserve::fuzz::fuzz_limits(tok.vocab_size());
  static const llmserve::ChatTemplate tmpl = load_template();
  static const llmserve::ChatRenderer render = [](const nlohmann::json& messages, bool add_gen) {
    return llmserve::apply_chat_template(tmpl, messages, add_gen, "<|im_start|>", "<|im_end|>",
                                         nlohmann::json::object());
  };
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto parsed = llmserve::parse_chat_request(body, tok, render, limits);
  if (parsed.is_ok()) {
    llmserve::fuzz::check_accepted(*parsed, limits);
  }
  return 0;
}
