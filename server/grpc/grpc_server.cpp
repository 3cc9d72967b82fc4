#include "server/grpc/grpc_server.h"

#include <fstream>
#include <sstream>

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "server/grpc/generation_service.h"
#include "server/grpc/reflection_service.h"
#include "server/grpc/vllm_engine_service.h"

namespace llmserve {

namespace {

constexpr const char* kServiceName = "llmserve.v1.Generation";
constexpr const char* kHealthName = "grpc.health.v1.Health";
constexpr const char* kReflectionName = "grpc.reflection.v1alpha.ServerReflection";
constexpr const char* kVllmEngineName = "vllm.grpc.engine.VllmEngine";

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

GrpcServer::GrpcServer(ServerState& state, ServerMetrics& metrics)
    : state_(state),
      service_(std::make_unique<GenerationService>(state, metrics)),
      vllm_engine_(std::make_unique<VllmEngineService>(state, metrics, *service_)),
      reflection_(std::make_unique<ReflectionService>(
          state.options().api_keys,
          std::vector<std::string>{kServiceName, kVllmEngineName, kHealthName, kReflectionName})) {}

GrpcServer::~GrpcServer() {
  stop(0);
}

Status GrpcServer::start() {
  const ServerOptions& o = state_.options();
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (o.tls_enabled()) {
    LLMSERVE_ASSIGN_OR_RETURN(std::string cert, read_file(o.tls_cert_file));
    LLMSERVE_ASSIGN_OR_RETURN(std::string key, read_file(o.tls_key_file));
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({key, cert});
    creds = grpc::SslServerCredentials(ssl);
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  const std::string addr = o.host + ":" + std::to_string(o.grpc_port);
  builder.AddListeningPort(addr, creds, &port_);
  builder.RegisterService(service_.get());
  builder.RegisterService(vllm_engine_.get());
  // Routers keep idle channels alive with pings (smg: every 30 s without calls): allow them.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.RegisterService(reflection_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(o.max_body_bytes, 1u << 30)));
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    server_.reset();
    return unavailable("cannot bind gRPC on " + addr);
  }
  set_serving(true);
  return Status::ok();
}

void GrpcServer::set_serving(bool serving) {
  if (!server_) return;
  if (auto* health = server_->GetHealthCheckService()) {
    health->SetServingStatus(serving);
    health->SetServingStatus(kServiceName, serving);
    health->SetServingStatus(kVllmEngineName, serving);
  }
}

void GrpcServer::stop(double grace_seconds) {
  if (!server_) return;
  set_serving(false);
  const auto deadline = std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            std::chrono::duration<double>(std::max(grace_seconds, 0.0)));
  server_->Shutdown(deadline);
  server_->Wait();
  server_.reset();
}

}  // namespace llmserve
