// VllmEngine.GetTokenizer once the bundle is ready: its zip in chunks of `chunk_bytes`, the
// SHA-256 on the last one (the gateway checks it and refuses a stream without one).
#pragma once

#include <memory>

#include <grpcpp/grpcpp.h>

#include "server/grpc/tokenizer_bundle.h"
#include "server/metrics/server_metrics.h"

namespace llmserve {

grpc::ServerWriteReactor<grpc::ByteBuffer>* start_tokenizer_call(
    ServerMetrics& metrics, std::shared_ptr<const TokenizerBundle> bundle,
    size_t chunk_bytes = size_t{1} << 20);

}  // namespace llmserve
