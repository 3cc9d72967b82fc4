// POST /v1/messages and POST /v1/messages/count_tokens (Anthropic's Messages API) on the HTTP
// port: the request through the chat path (messages_request.h), the output as a Message or as
// Anthropic's event stream (message_events.h), errors in Anthropic's envelope
// (anthropic_error.h). `x-api-key` is accepted beside Authorization: Bearer; anthropic-version
// and anthropic-beta are accepted and not needed.
#pragma once

#include "server/anthropic/messages_request.h"
#include "server/http/http_api.h"

namespace llmserve {

// The API for HttpServer::add_api.
HttpApi anthropic_api(MessagesOptions options);

}  // namespace llmserve
