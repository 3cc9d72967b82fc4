// POST /v1/messages: arbitrary body bytes -> parse_messages_request with the SmolLM2 chat
// template and the byte tokenizer; and the same bytes as a model's reply, streamed a byte at a
// time through the Messages event builder in the generic and the Hermes tool formats (the
// tool-reply scanner must take any text; every event and the final message must serialize).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "engine/chat/chat_template.h"
#include "server/anthropic/message_events.h"
#include "server/anthropic/messages_request.h"
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

void stream_reply(std::string_view reply, llmserve::ToolFormat format) {
  llmserve::MessageEvents ev({"msg_fuzz", "m", true, format, llmserve::ReasoningStart::kOff, {}});
  size_t events = 0;
  for (size_t i = 0; i < reply.size(); ++i) {
    llmserve::StepOutput out;
    out.text = std::string(1, reply[i]);
    if (i + 1 == reply.size()) out.finish = llmserve::FinishReason::kStop;
    for (const auto& e : ev.on_output(out)) events += llmserve::anthropic_sse(e).size() > 0;
  }
  for (const auto& e : ev.finish(llmserve::Status::ok())) {
    events += llmserve::anthropic_sse(e).size() > 0;
  }
  const auto m = ev.message();
  if (m.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).empty()) {
    std::abort();
  }
  if (!reply.empty() && events < 4) std::abort();  // message_start, ping, delta, stop at least
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
  auto parsed = llmserve::parse_messages_request(body, tok, render, limits, {});
  if (parsed.is_ok()) llmserve::fuzz::check_accepted(*parsed, limits);
  if (size <= 4096) {
    stream_reply(body, llmserve::ToolFormat::kGeneric);
    stream_reply(body, llmserve::ToolFormat::kHermes);
  }
  return 0;
}
