// The one mapping from Status to grpc::Status, and its code names for metrics.
#pragma once

#include <string>

#include <grpcpp/grpcpp.h>

#include "engine/core/status.h"

namespace llmserve {

// INVALID_ARGUMENT / UNIMPLEMENTED -> INVALID_ARGUMENT; OUT_OF_RANGE (over the context),
// RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, NOT_FOUND, FAILED_PRECONDITION,
// ALREADY_EXISTS as themselves; others -> INTERNAL.
grpc::Status to_grpc_status(const Status& status);
grpc::Status unauthenticated_status();
std::string grpc_code_name(grpc::StatusCode code);  // "OK", "INVALID_ARGUMENT", ...

}  // namespace llmserve
