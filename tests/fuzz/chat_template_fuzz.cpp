// Chat templates: arbitrary template source + messages. Input: template source, then (after the
// first 0x00 byte, if any) a JSON context; without valid JSON a fixed two-message conversation is
// used. The interpreter's step and output limits must stop loops and blow-ups with a Status.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"

namespace {
uint64_t g_sink = 0;  // keeps results observable
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nlohmann::ordered_json;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t cut = in.find('\0');
  std::string_view source = in.substr(0, cut);
  auto tmpl = llmserve::ChatTemplate::parse(source);
  if (!tmpl.is_ok()) return 0;

  ordered_json messages = ordered_json::array(
      {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi {{x}}"}}});
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
