// vLLM's `continue_final_message` (transformers' apply_chat_template semantics): the chat is
// rendered without a generation prompt and the text is cut right after the final assistant
// message's content, so the model continues that message instead of starting a new turn.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace llmserve {

// `rendered`: the template's output for the whole chat with add_generation_prompt false;
// `content`: the final (assistant) message's content as sent. The cut falls after the last
// occurrence of `content`; a template that trims the content is matched on the trimmed text
// (what follows it in `content`, trailing spaces, is then dropped as the template dropped it).
// INVALID_ARGUMENT "continue_final_message: ..." when the content is empty or the rendered text
// does not hold it.
Result<std::string> cut_after_final_message(std::string_view rendered, std::string_view content);

}  // namespace llmserve
