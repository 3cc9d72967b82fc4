// POST /v1/embeddings (OpenAI's shape) on the HTTP port: the body read by embeddings_request.h,
// the vectors computed as pooling requests in the engine's continuous batch (embedding_job.h),
// answered as {"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
// "model", "usage": {"prompt_tokens", "total_tokens"}}; base64 is the little-endian float32
// bytes, as the openai SDK decodes them. Errors in OpenAI's shape.
#pragma once

#include "server/http/http_api.h"

namespace llmserve {

// The API for HttpServer::add_api (its errors are OpenAI's).
HttpApi embeddings_api();

}  // namespace llmserve
