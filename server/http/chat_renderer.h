// The ChatRenderer for an engine: its model's chat template with the tokenizer's BOS / EOS
// strings, and `reasoning` (server.reasoning_parser) resolved against that template. Empty when
// the model has no template.
#pragma once

#include "engine/engine.h"
#include "server/http/chat_request.h"

namespace llmserve {

ChatRenderer make_chat_renderer(const Engine& engine,
                                ReasoningParser reasoning = ReasoningParser::kAuto);

}  // namespace llmserve
