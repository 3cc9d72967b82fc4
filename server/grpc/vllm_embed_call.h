// VllmEngine.Embed (smg routes /v1/embeddings to a worker with it): the request's token ids
// (`tokenized.input_ids`; the router tokenizes) run as one pooling request (engine/pooling) in
// the engine's continuous batch; the answer is the vector, its width and the prompt's token
// count. Runs on its own thread; the call's deadline (else server.request_timeout_seconds)
// bounds it; OnCancel (the gateway dropped the call) aborts the engine request. Empty or
// out-of-vocab ids are INVALID_ARGUMENT, an input past max_num_batched_tokens OUT_OF_RANGE.
#pragma once

#include <grpcpp/grpcpp.h>

#include "server/grpc/vllm_engine_service.h"

namespace llmserve {

grpc::ServerUnaryReactor* start_vllm_embed_call(VllmEngineService& svc,
                                                grpc::CallbackServerContext* ctx,
                                                const grpc::ByteBuffer& request,
                                                grpc::ByteBuffer* response);

}  // namespace llmserve
