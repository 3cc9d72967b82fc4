#include "server/grpc/wire_codec.h"

#include <string>

#include <grpcpp/impl/codegen/proto_utils.h>

namespace llmserve {

using MessageTraits = grpc::SerializationTraits<google::protobuf::MessageLite>;

grpc::Status parse_request(const grpc::ByteBuffer& bytes, google::protobuf::MessageLite* out) {
  grpc::ByteBuffer copy(bytes);  // shares the slices; Deserialize consumes its buffer
  if (!MessageTraits::Deserialize(&copy, out).ok()) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        "request: the bytes are not a valid " + out->GetTypeName() + " (malformed protobuf)");
  }
  return grpc::Status::OK;
}

grpc::Status serialize_response(const google::protobuf::MessageLite& msg, grpc::ByteBuffer* out) {
  bool own_buffer = false;
  out->Clear();  // the writer starts from an empty buffer
  if (!MessageTraits::Serialize(msg, out, &own_buffer).ok()) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "cannot serialize the response");
  }
  return grpc::Status::OK;
}

}  // namespace llmserve
