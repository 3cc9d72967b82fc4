// Sends a non-streaming generation body that a ResponseBuilder gives in pieces: a small one at
// once with its length; a large one (a scoring request's prompt logprobs: tens of MB) as chunked
// transfer, piece by piece, so that no copy of the whole body is held. After a large body the
// allocator hands its freed pages back to the system, so an idle daemon shrinks again.
#pragma once

#include <cstddef>
#include <memory>

#include <httplib.h>

#include "server/http/openai_response.h"

namespace llmserve {

constexpr size_t kInlineBodyBytes = 1u << 20;  // up to this, one body with Content-Length
constexpr size_t kTrimAfterBytes = 16u << 20;  // after a body this large: malloc_trim(0)

void send_body_pieces(httplib::Response& res, std::shared_ptr<ResponseBuilder> builder);

// Returns freed heap pages of every malloc arena to the system (glibc; a no-op elsewhere).
void give_memory_back();

}  // namespace llmserve
