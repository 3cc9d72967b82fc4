// The calls of llmserve.v1.Generation that run a GenerationJob: server-streaming Generate and
// unary Complete. Each runs the job on its own pump thread and writes serialized messages (the
// service's methods are raw: see wire_codec.h); OnCancel (client cancel or deadline) aborts the
// job, which takes effect at the engine's next step.
#pragma once

#include <cstdint>

#include <grpcpp/grpcpp.h>

#include "server/grpc/generation_service.h"

namespace llmserve {

grpc::ServerWriteReactor<grpc::ByteBuffer>* start_generate_call(GenerationService& svc,
                                                                grpc::CallbackServerContext* ctx,
                                                                GenerationService::Started job);
// A Generate call that ends at once with `status` (auth, admission or parse errors).
grpc::ServerWriteReactor<grpc::ByteBuffer>* failed_generate_call(const grpc::Status& status);

// n: the samples asked for (one choice each). `response` is written before Finish.
grpc::ServerUnaryReactor* start_complete_call(GenerationService& svc,
                                              grpc::CallbackServerContext* ctx,
                                              GenerationService::Started job, int32_t n,
                                              grpc::ByteBuffer* response);

}  // namespace llmserve
