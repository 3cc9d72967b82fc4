#include "server/grpc/vllm_generate_call.h"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "server/grpc/grpc_status.h"
#include "server/grpc/wire_codec.h"

namespace llmserve {

namespace {

namespace vpb = ::vllm::grpc::engine;

constexpr const char* kMethod = "VllmEngine/Generate";

class VllmGenerateReactor : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  VllmGenerateReactor(VllmEngineService& svc, grpc::CallbackServerContext* ctx, GrpcJob job,
                      VllmResponseBuilder builder)
      : svc_(svc), ctx_(ctx), job_(std::move(job)), builder_(std::move(builder)) {
    thread_ = std::thread([this] { pump(); });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    writing_ = false;
    if (!ok) broken_ = true;
    cv_.notify_all();
  }
  void OnCancel() override {
    job_.job->cancel();
    std::lock_guard lock(mu_);
    broken_ = true;
    cv_.notify_all();
  }
  void OnDone() override {
    // OnDone may run on the pump thread itself (inside Finish); never join from there.
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else if (thread_.joinable()) {
      thread_.join();
    }
    delete this;
  }

 private:
  // Writes one message and waits for it; false when the call broke.
  bool write(const vpb::GenerateResponse& msg, Status* failure) {
    const grpc::Status serialized = serialize_response(msg, &bytes_);
    if (!serialized.ok()) {
      *failure = internal_error(serialized.error_message());
      return false;
    }
    std::unique_lock lock(mu_);
    if (broken_) return false;
    writing_ = true;
    StartWrite(&bytes_);
    cv_.wait(lock, [this] { return !writing_; });
    return !broken_;
  }

  void pump() {
    Status failure;
    bool broken = false;
    std::vector<vpb::GenerateResponse> msgs;
    while (!broken) {
      auto ev = job_.job->next(std::chrono::milliseconds(50));
      {
        std::lock_guard lock(mu_);
        broken = broken_;
      }
      if (broken) break;
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
          broken = true;
          break;
        }
      }
      if (!failure.is_ok()) break;
    }
    grpc::Status status = grpc::Status::OK;
    {
      std::lock_guard lock(mu_);
      broken = broken || broken_;
    }
    if (broken && failure.is_ok()) {
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
  std::mutex mu_;
  std::condition_variable cv_;
  bool writing_ = false;
  bool broken_ = false;
  std::thread thread_;
};

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* start_vllm_generate_call(
    VllmEngineService& svc, grpc::CallbackServerContext* ctx, GrpcJob job,
    VllmResponseBuilder builder) {
  return new VllmGenerateReactor(svc, ctx, std::move(job), std::move(builder));
}

}  // namespace llmserve
