// Config (config/config.h) -> the option structs the engine and the servers take.
#pragma once

#include "config/config.h"
#include "engine/core/status.h"
#include "engine/engine.h"
#include "server/common/server_options.h"

namespace llmserve {

// Reads model.chat_template (a file) into chat_template_override; NOT_FOUND when unreadable.
Result<EngineOptions> engine_options_from_config(const Config& config);
ServerOptions server_options_from_config(const Config& config);

}  // namespace llmserve
