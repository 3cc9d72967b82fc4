#include "server/http/chat_renderer.h"

#include "engine/chat/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/common/request_images.h"

namespace llmserve {

ChatRenderer make_chat_renderer(const Engine& engine, ReasoningParser reasoning) {
  const ChatTemplate* tmpl = engine.chat_template();
  if (tmpl == nullptr) return ChatRenderer();
  const Tokenizer& tok = engine.tokenizer();
  const TokenizerSpec& spec = tok.spec();
  const std::string bos = spec.bos_id >= 0 ? tok.token_text(spec.bos_id) : std::string();
  const std::string eos = spec.eos_id >= 0 ? tok.token_text(spec.eos_id) : std::string();
  auto fn = [tmpl, bos, eos](const nlohmann::json& messages, bool add_generation_prompt,
                             const nlohmann::ordered_json& variables) -> Result<std::string> {
    nlohmann::ordered_json extra = variables.is_object() ? variables : nlohmann::ordered_json{};
    if (extra.contains("tools") && (!extra["tools"].is_array() || extra["tools"].empty())) {
      extra.erase("tools");
    }
    return apply_chat_template(*tmpl, nlohmann::ordered_json(messages), add_generation_prompt, bos,
                               eos, extra);
  };
  ChatRenderer r(std::move(fn), detect_tool_format(tmpl->source()),
                 resolve_reasoning_parser(reasoning, tmpl->source()),
                 template_writes_think(tmpl->source()));
  r.images = image_token_text(engine.image_encoder(), tok);
  return r;
}

}  // namespace llmserve
