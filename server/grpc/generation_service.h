// llmserve.v1.Generation on the gRPC callback API. Each Generate / Complete call runs a
// GenerationJob on its own pump thread; OnCancel (client cancel or deadline) aborts the job,
// which takes effect at the engine's next step.
#pragma once

#include "llmserve/v1/generation.grpc.pb.h"
#include "server/common/api_keys.h"
#include "server/common/server_state.h"
#include "server/metrics/server_metrics.h"

namespace llmserve {

class GenerationService final : public v1::Generation::CallbackService {
 public:
  GenerationService(ServerState& state, ServerMetrics& metrics);

  grpc::ServerWriteReactor<v1::GenerateResponse>* Generate(grpc::CallbackServerContext* ctx,
                                                           const v1::GenerateRequest* req) override;
  grpc::ServerUnaryReactor* Complete(grpc::CallbackServerContext* ctx,
                                     const v1::GenerateRequest* req,
                                     v1::CompleteResponse* resp) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* ctx,
                                     const v1::TokenizeRequest* req,
                                     v1::TokenizeResponse* resp) override;
  grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* ctx,
                                       const v1::DetokenizeRequest* req,
                                       v1::DetokenizeResponse* resp) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* ctx,
                                       const v1::ListModelsRequest* req,
                                       v1::ListModelsResponse* resp) override;

  // Admission + parsing + submit, shared by Generate and Complete. On error `status` is set.
  struct Started {
    std::unique_ptr<ServerState::Slot> slot;
    std::unique_ptr<GenerationJob> job;
    std::string id;
  };
  Result<Started> start_job(grpc::CallbackServerContext* ctx, const v1::GenerateRequest& req);

  ServerState& state() { return state_; }
  ServerMetrics& metrics() { return metrics_; }
  bool authorized(const grpc::CallbackServerContext* ctx) const;
  grpc::ServerUnaryReactor* finish_unary(grpc::CallbackServerContext* ctx, const char* method,
                                         const grpc::Status& status);

 private:
  ServerState& state_;
  ServerMetrics& metrics_;
  ApiKeys keys_;
};

}  // namespace llmserve
