#include "bench/serve/openai_stream.h"

#include <nlohmann/json.hpp>

namespace llmserve::bench {

OpenAiStreamAccumulator::OpenAiStreamAccumulator(int expected_prompt_tokens) {
  r_.prompt_tokens = expected_prompt_tokens;
}

void OpenAiStreamAccumulator::fail(std::string why) {
  if (r_.error.empty()) r_.error = std::move(why);
}

void OpenAiStreamAccumulator::on_event(std::string_view data, double t_s) {
  if (done_) return;
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  const auto j = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    fail("malformed stream chunk: " + std::string(data.substr(0, 200)));
    return;
  }
  if (const auto e = j.find("error"); e != j.end() && !e->is_null()) {
    const auto m = e->is_object() ? e->find("message") : e->end();
    fail("stream error: " + (m != e->end() && m->is_string() ? m->get<std::string>() : e->dump()));
    return;
  }
  bool has_tokens = false;
  if (const auto c = j.find("choices"); c != j.end() && c->is_array()) {
    for (const auto& choice : *c) {
      const auto text = choice.find("text");
      if (text != choice.end() && text->is_string() &&
          !text->get_ref<const std::string&>().empty()) {
        has_tokens = true;
        r_.generated_text += text->get_ref<const std::string&>();
      }
    }
  }
  if (has_tokens) {
    if (chunks_with_tokens_ == 0) {
      r_.ttft_s = t_s;
    } else {
      r_.itl_s.push_back(t_s - last_token_t_);
    }
    last_token_t_ = t_s;
    ++chunks_with_tokens_;
  }
  if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
    got_usage_ = true;
    r_.prompt_tokens = u->value("prompt_tokens", r_.prompt_tokens);
    r_.output_tokens = u->value("completion_tokens", 0);
  }
}

RequestResult OpenAiStreamAccumulator::finish(double t_s, const std::string& transport_error) {
  r_.latency_s = t_s;
  if (!transport_error.empty()) fail(transport_error);
  if (!done_) fail("stream ended without data: [DONE]");
  if (chunks_with_tokens_ == 0) fail("no chunk carried generated text");
  if (!got_usage_) r_.output_tokens = chunks_with_tokens_;
  r_.success = r_.error.empty();
  return std::move(r_);
}

}  // namespace llmserve::bench
