// What both gRPC generation services (llmserve.v1.Generation and vllm.grpc.engine.VllmEngine)
// do to start a request: admission, parsing (the service's own reader), the request id's
// registration (Abort / cancel by id), grammar compilation and the engine submit.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "engine/core/status.h"
#include "server/common/active_requests.h"
#include "server/common/generation_job.h"
#include "server/common/generation_request.h"
#include "server/common/request_limits.h"
#include "server/common/server_state.h"
#include "server/metrics/server_metrics.h"

namespace llmserve {

// A started request. Destroy `registration` before `job`.
struct GrpcJob {
  std::unique_ptr<ServerState::Slot> slot;
  std::unique_ptr<GenerationJob> job;
  std::unique_ptr<ActiveRequests::Registration> registration;
  std::string id;
  std::vector<int32_t> prompt;  // the (first) prompt's token ids
};

// The bounds a request is validated against, from the engine and the server options.
RequestLimits grpc_request_limits(const ServerState& state);

using GrpcParseFn = std::function<Result<GenerationRequest>(const RequestLimits&)>;

// Admission (UNAVAILABLE / RESOURCE_EXHAUSTED, counted as rejections), `parse`, the id ("" = a
// generated "gen-..." id; over kMaxClientRequestIdBytes is INVALID_ARGUMENT "request_id: ..."
// before anything else; a live duplicate is ALREADY_EXISTS), grammar compilation (a cancelled
// call stops waiting for it) and submit. The call's deadline, else server.request_timeout_seconds,
// bounds the request.
Result<GrpcJob> start_grpc_job(ServerState& state, ServerMetrics& metrics,
                               grpc::CallbackServerContext* ctx, const GrpcParseFn& parse,
                               const std::string& id);

// True when the call carries its own deadline (a client's gRPC timeout), which then bounds the
// request; a request it ends finishes the call DEADLINE_EXCEEDED, as gRPC's own clock would.
bool call_has_deadline(const grpc::CallbackServerContext* ctx);

}  // namespace llmserve
