#include "server/grpc/vllm_tokenizer_call.h"

#include <algorithm>

#include "server/grpc/grpc_status.h"
#include "server/grpc/wire_codec.h"
#include "smg/grpc/common.pb.h"

namespace llmserve {

namespace {

// Writes the next chunk from OnWriteDone: no thread of its own.
class TokenizerReactor : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  TokenizerReactor(ServerMetrics& metrics, std::shared_ptr<const TokenizerBundle> bundle,
                   size_t chunk_bytes)
      : metrics_(metrics),
        bundle_(std::move(bundle)),
        chunk_bytes_(std::max<size_t>(chunk_bytes, 1)) {
    next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
    next();
  }
  void OnDone() override { delete this; }

 private:
  void next() {
    const std::string& zip = bundle_->zip;
    if (offset_ >= zip.size() && sent_any_) return finish(grpc::Status::OK);
    const size_t n = std::min(chunk_bytes_, zip.size() - offset_);
    ::smg::grpc::common::GetTokenizerChunk chunk;
    chunk.set_data(zip.substr(offset_, n));
    offset_ += n;
    sent_any_ = true;
    if (offset_ >= zip.size()) chunk.set_sha256(bundle_->sha256_hex);
    const grpc::Status s = serialize_response(chunk, &bytes_);
    if (!s.ok()) return finish(s);
    StartWrite(&bytes_);
  }
  void finish(const grpc::Status& s) {
    metrics_.count_grpc("VllmEngine/GetTokenizer", grpc_code_name(s.error_code()));
    Finish(s);
  }

  ServerMetrics& metrics_;
  std::shared_ptr<const TokenizerBundle> bundle_;
  const size_t chunk_bytes_;
  size_t offset_ = 0;
  bool sent_any_ = false;
  grpc::ByteBuffer bytes_;
};

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* start_tokenizer_call(
    ServerMetrics& metrics, std::shared_ptr<const TokenizerBundle> bundle, size_t chunk_bytes) {
  return new TokenizerReactor(metrics, std::move(bundle), chunk_bytes);
}

}  // namespace llmserve
