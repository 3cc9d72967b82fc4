// Protobuf messages <-> the raw bytes of gRPC calls. The Generation service takes its requests
// as bytes (raw callback methods) and parses them here, because gRPC's generated callback
// handlers answer a request that fails to parse with UNIMPLEMENTED and an empty message
// (grpcpp/impl/codegen/server_callback_handlers.h, gRPC 1.51: "if deserialization or reactor
// creator failed, we need to fail the call"); malformed bytes are the client's error.
#pragma once

#include <google/protobuf/message_lite.h>
#include <grpcpp/grpcpp.h>

namespace llmserve {

// INVALID_ARGUMENT "request: ..." when `bytes` is not a valid encoding of out's type.
grpc::Status parse_request(const grpc::ByteBuffer& bytes, google::protobuf::MessageLite* out);
// Replaces out's bytes with the serialized message; INTERNAL when it cannot be serialized.
grpc::Status serialize_response(const google::protobuf::MessageLite& msg, grpc::ByteBuffer* out);

}  // namespace llmserve
