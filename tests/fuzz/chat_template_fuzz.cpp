// Chat templates: arbitrary template source + messages. Input: template source, then (after the
// first 0x00 byte, if any) a JSON context; without valid JSON a fixed two-message conversation is
// used. The interpreter's step and output limits must stop loops and blow-ups with a Status.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "engine/chat/jinja_evaluator.h"

namespace {
uint64_t g_sink = 0;  // keeps results observable

// Limits 50-2000x under the serving defaults (jinja::Limits): the same checks trip, on inputs
// small enough that a looping template costs about a millisecond under ASan, not seconds.
llmserve::jinja::Limits fuzz_limits() {
  llmserve::jinja::Limits l;
  l.max_steps = 20'000;
  l.max_loop_iterations = 2'000;
  l.max_call_depth = 32;
  l.max_output_bytes = 16u << 10;
  l.max_range = 2'000;
  return l;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nlohmann::ordered_json;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t cut = in.find('\0');
  std::string_view source = in.substr(0, cut);
  static const llmserve::jinja::Limits limits = fuzz_limits();
  auto tmpl = llmserve::ChatTemplate::parse(source, limits);
  if (!tmpl.is_ok()) return 0;

  ordered_json messages = ordered_json::array({{{"role", "system"}, {"content", "Be brief."}},
                                               {{"role", "user"}, {"content", "Hi {{x}}"}}});
  ordered_json extra = ordered_json::object();
  if (cut != std::string_view::npos) {
    ordered_json ctx = ordered_json::parse(in.substr(cut + 1), nullptr, false);
    if (!ctx.is_discarded()) {
      if (ctx.is_object() && ctx.contains("messages")) {
        messages = ctx["messages"];
        ctx.erase("messages");
        extra = std::move(ctx);
      } else if (ctx.is_object()) {
        extra = std::move(ctx);
      } else {
        messages = std::move(ctx);
      }
    }
  }
  auto out = llmserve::apply_chat_template(*tmpl, messages, (size & 1) != 0, "<s>", "</s>", extra);
  if (out.is_ok()) g_sink += out->size();
  return 0;
}
