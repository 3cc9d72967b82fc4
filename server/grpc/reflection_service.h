// gRPC server reflection (grpc.reflection.v1alpha.ServerReflection, as grpcurl and
// grpcio-reflection use it), served from the process's generated descriptor pool. It is ours
// rather than gRPC's plugin so that it checks the API keys like every llmserve.v1 method:
// without a valid key the stream ends UNAUTHENTICATED before any request is read.
// grpc.health.v1.Health stays open (as HTTP /health is).
#pragma once

#include <string>
#include <vector>

#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "server/common/api_keys.h"

namespace llmserve {

class ReflectionService final
    : public grpc::reflection::v1alpha::ServerReflection::CallbackService {
 public:
  // services: the fully qualified names list_services answers with.
  ReflectionService(std::vector<std::string> api_keys, std::vector<std::string> services);

  grpc::ServerBidiReactor<grpc::reflection::v1alpha::ServerReflectionRequest,
                          grpc::reflection::v1alpha::ServerReflectionResponse>*
  ServerReflectionInfo(grpc::CallbackServerContext* ctx) override;

  // One request's response (the stream writes one per request).
  void answer(const grpc::reflection::v1alpha::ServerReflectionRequest& req,
              grpc::reflection::v1alpha::ServerReflectionResponse* resp) const;

 private:
  ApiKeys keys_;
  std::vector<std::string> services_;
};

}  // namespace llmserve
