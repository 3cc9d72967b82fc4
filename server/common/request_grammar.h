// Compiles a request's structured-output grammar on the engine's grammar pool (the calling
// front-end thread waits; the engine's step loop never does) and attaches it to the engine
// requests. Errors: INVALID_ARGUMENT naming the field (structured_output_field),
// DEADLINE_EXCEEDED when the compile outlasts the request's deadline, CANCELLED when
// client_gone() turns true while waiting (the compile is dropped when nobody else waits for
// it), RESOURCE_EXHAUSTED or UNAVAILABLE from the compiler. The caller should hold no admission
// slot while this waits.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "engine/engine.h"
#include "server/common/generation_request.h"

namespace llmserve {

Status attach_request_grammar(Engine& engine, const GenerationRequest& request,
                              std::optional<std::chrono::steady_clock::time_point> deadline,
                              std::vector<GenerateRequest>* engine_requests,
                              const std::function<bool()>& client_gone = {});

}  // namespace llmserve
