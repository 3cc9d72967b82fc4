#include "server/grpc/vllm_generate_call.h"

#include <vector>

#include "server/grpc/grpc_status.h"
#include "server/grpc/pumped_writer.h"
#include "server/grpc/wire_codec.h"

namespace llmserve {

namespace {

namespace vpb = ::vllm::grpc::engine;

constexpr const char* kMethod = "VllmEngine/Generate";

class VllmGenerateReactor : public PumpedWriter {
 public:
  VllmGenerateReactor(VllmEngineService& svc, grpc::CallbackServerContext* ctx, GrpcJob job,
                      VllmResponseBuilder builder)
      : svc_(svc), ctx_(ctx), job_(std::move(job)), builder_(std::move(builder)) {
    start_pump();
  }

 private:
  void on_cancel() override { job_.job->cancel(); }

  // Writes one message and waits for it; false when the call broke.
  bool write(const vpb::GenerateResponse& msg, Status* failure) {
    const grpc::Status serialized = serialize_response(msg, &bytes_);
    if (!serialized.ok()) {
      *failure = internal_error(serialized.error_message());
      return false;
    }
    return send(&bytes_);
  }

  void pump() override {
    Status failure;
    bool stop = false;
    std::vector<vpb::GenerateResponse> msgs;
    while (!stop) {
      auto ev = job_.job->next(std::chrono::milliseconds(50));
      if (broken()) break;
      if (!ev) {
        if (job_.job->timed_out()) continue;
        break;
      }
      const StepOutput& o = ev->output;
      if (o.finish == FinishReason::kError && failure.is_ok()) {
        failure = o.error.is_ok() ? internal_error("generation failed") : o.error;
      }
      msgs.clear();
      builder_.add(o, &msgs);
      for (const auto& m : msgs) {
        if (!write(m, &failure)) {
          stop = true;
          break;
        }
      }
      if (!failure.is_ok()) break;
    }
    grpc::Status status = grpc::Status::OK;
    stop = stop || broken();
    if (stop && failure.is_ok()) {
      job_.job->cancel();
      status = ctx_->IsCancelled()
                   ? grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client")
                   : grpc::Status(grpc::StatusCode::CANCELLED, "request cancelled");
    } else if (!failure.is_ok()) {
      job_.job->cancel();
      status = svc_.calls().with_retry_hint(ctx_, to_grpc_status(failure));
    }
    svc_.metrics().count_grpc(kMethod, grpc_code_name(status.error_code()));
    job_.registration.reset();
    job_.slot.reset();
    Finish(status);
  }

  VllmEngineService& svc_;
  grpc::CallbackServerContext* ctx_;
  GrpcJob job_;
  VllmResponseBuilder builder_;
  grpc::ByteBuffer bytes_;  // the message being written
};

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* start_vllm_generate_call(
    VllmEngineService& svc, grpc::CallbackServerContext* ctx, GrpcJob job,
    VllmResponseBuilder builder) {
  return new VllmGenerateReactor(svc, ctx, std::move(job), std::move(builder));
}

}  // namespace llmserve
