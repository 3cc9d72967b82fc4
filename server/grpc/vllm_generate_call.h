// VllmEngine.Generate once started: a pump thread reads the GenerationJob and writes the
// messages VllmResponseBuilder makes, one write at a time. OnCancel (the gateway dropped the
// call: its client went away) cancels the job, which aborts the engine request at its next
// step. A generation error ends the call with its gRPC status.
#pragma once

#include <grpcpp/grpcpp.h>

#include "server/grpc/grpc_job.h"
#include "server/grpc/vllm_engine_service.h"
#include "server/grpc/vllm_output.h"

namespace llmserve {

grpc::ServerWriteReactor<grpc::ByteBuffer>* start_vllm_generate_call(
    VllmEngineService& svc, grpc::CallbackServerContext* ctx, GrpcJob job,
    VllmResponseBuilder builder);

}  // namespace llmserve
