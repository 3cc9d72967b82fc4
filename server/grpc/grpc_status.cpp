#include "server/grpc/grpc_status.h"

namespace llmserve {

grpc::Status to_grpc_status(const Status& status) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (status.code()) {
    case StatusCode::kOk:
      return grpc::Status::OK;
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnimplemented:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case StatusCode::kOutOfRange:  // a prompt plus max_tokens over the context (docs/ROUTERS.md)
      code = grpc::StatusCode::OUT_OF_RANGE;
      break;
    case StatusCode::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case StatusCode::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case StatusCode::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case StatusCode::kDeadlineExceeded:
      code = grpc::StatusCode::DEADLINE_EXCEEDED;
      break;
    case StatusCode::kCancelled:
      code = grpc::StatusCode::CANCELLED;
      break;
    case StatusCode::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case StatusCode::kAlreadyExists:
      code = grpc::StatusCode::ALREADY_EXISTS;
      break;
    default:
      code = grpc::StatusCode::INTERNAL;
      break;
  }
  return grpc::Status(code, status.message());
}

grpc::Status unauthenticated_status() {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "missing or incorrect API key; send metadata 'authorization: Bearer <key>'");
}

std::string grpc_code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    default:
      return "UNKNOWN";
  }
}

}  // namespace llmserve
