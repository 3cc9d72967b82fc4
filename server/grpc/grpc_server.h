// The gRPC server: llmserve.v1.Generation, vllm.grpc.engine.VllmEngine (the gateway worker
// service, vllm_engine_service.h), grpc.health.v1.Health and server reflection, with optional
// TLS. With API keys, Generation and reflection need one; health answers without (as HTTP
// /health). start() binds (port 0 = any free port); set_serving(false) flips health to
// NOT_SERVING while draining.
#pragma once

#include <memory>

#include "engine/core/status.h"
#include "server/common/server_state.h"
#include "server/metrics/server_metrics.h"

namespace grpc {
class Server;
}

namespace llmserve {

class GenerationService;
class ReflectionService;
class VllmEngineService;

class GrpcServer {
 public:
  GrpcServer(ServerState& state, ServerMetrics& metrics);
  ~GrpcServer();

  Status start();
  int port() const { return port_; }
  void set_serving(bool serving);
  // Waits for calls in flight up to `grace_seconds`, then cancels the rest.
  void stop(double grace_seconds = 0);

 private:
  ServerState& state_;
  std::unique_ptr<GenerationService> service_;
  std::unique_ptr<VllmEngineService> vllm_engine_;
  std::unique_ptr<ReflectionService> reflection_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace llmserve
