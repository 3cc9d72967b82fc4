// llmserve.v1.Generation on the gRPC callback API. Every method is registered raw (bytes in,
// bytes out: wire_codec.h) so that malformed request bytes get INVALID_ARGUMENT rather than
// gRPC's UNIMPLEMENTED; each parses its request, checks the API key, and answers in the
// messages of generation.proto. Generate / Complete run a GenerationJob (generation_reactors.h).
#pragma once

#include <memory>
#include <string>

#include "llmserve/v1/generation.grpc.pb.h"
#include "server/common/active_requests.h"
#include "server/common/api_keys.h"
#include "server/common/server_state.h"
#include "server/grpc/grpc_job.h"
#include "server/metrics/server_metrics.h"

namespace llmserve {

using RawGenerationService = v1::Generation::WithRawCallbackMethod_Generate<
    v1::Generation::WithRawCallbackMethod_Complete<v1::Generation::WithRawCallbackMethod_Tokenize<
        v1::Generation::WithRawCallbackMethod_Detokenize<
            v1::Generation::WithRawCallbackMethod_ListModels<v1::Generation::Service>>>>>;

class GenerationService final : public RawGenerationService {
 public:
  GenerationService(ServerState& state, ServerMetrics& metrics);

  grpc::ServerWriteReactor<grpc::ByteBuffer>* Generate(grpc::CallbackServerContext* ctx,
                                                       const grpc::ByteBuffer* req) override;
  grpc::ServerUnaryReactor* Complete(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                     grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                     grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* ctx,
                                       const grpc::ByteBuffer* req,
                                       grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* ctx,
                                       const grpc::ByteBuffer* req,
                                       grpc::ByteBuffer* resp) override;

  // Admission + parsing + submit (start_grpc_job), shared by Generate and Complete.
  using Started = GrpcJob;
  Result<Started> start_job(grpc::CallbackServerContext* ctx, const v1::GenerateRequest& req);

  ServerState& state() { return state_; }
  ServerMetrics& metrics() { return metrics_; }
  bool authorized(const grpc::CallbackServerContext* ctx) const;
  // RESOURCE_EXHAUSTED and UNAVAILABLE get trailing metadata "retry-after: <seconds>"
  // (server.retry_after_seconds, as HTTP's Retry-After header). Returns `status`.
  grpc::Status with_retry_hint(grpc::CallbackServerContext* ctx, grpc::Status status) const;
  // Counts and finishes a unary call; `response` (when given and status is OK) is serialized
  // into `out` first.
  grpc::ServerUnaryReactor* finish_unary(grpc::CallbackServerContext* ctx, const char* method,
                                         grpc::Status status,
                                         const google::protobuf::MessageLite* response = nullptr,
                                         grpc::ByteBuffer* out = nullptr);

 private:
  ServerState& state_;
  ServerMetrics& metrics_;
  ApiKeys keys_;
};

}  // namespace llmserve
