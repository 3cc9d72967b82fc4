#include "server/grpc/generation_reactors.h"

#include <algorithm>
#include <thread>

#include "server/grpc/grpc_job.h"
#include "server/grpc/grpc_status.h"
#include "server/grpc/proto_convert.h"
#include "server/grpc/pumped_writer.h"
#include "server/grpc/wire_codec.h"

namespace llmserve {

namespace {

// A request that the call's own deadline ended: the status gRPC's clock gives such a call.
grpc::Status deadline_exceeded() {
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline exceeded");
}

// OnDone may run on the pump thread itself (inside Finish); never join from there.
void join_or_detach(std::thread& t) {
  if (t.get_id() == std::this_thread::get_id())
    t.detach();
  else if (t.joinable())
    t.join();
}

// Server-streaming Generate: a pump thread pulls engine outputs and writes them one at a time.
class GenerateReactor : public PumpedWriter {
 public:
  GenerateReactor(GenerationService& svc, grpc::CallbackServerContext* ctx,
                  GenerationService::Started started)
      : svc_(svc), ctx_(ctx), started_(std::move(started)) {
    tokenizer_ = &svc_.state().engine()->tokenizer();
    start_pump();
  }

 private:
  void on_cancel() override { started_.job->cancel(); }

  void pump() override {
    Status failure;
    bool timed_out = false;
    while (true) {
      auto ev = started_.job->next(std::chrono::milliseconds(50));
      if (broken()) break;
      if (!ev) {
        if (started_.job->timed_out()) continue;
        break;
      }
      const StepOutput& o = ev->output;
      if (o.finish == FinishReason::kError && failure.is_ok()) {
        failure = o.error.is_ok() ? internal_error("generation failed") : o.error;
      }
      if (o.text.empty() && o.token_ids.empty() && o.prompt_logprobs.empty() &&
          o.finish == FinishReason::kNone) {
        continue;
      }
      msg_.Clear();
      msg_.set_id(started_.id);
      msg_.set_index(o.index);
      msg_.set_text(o.text);
      for (int32_t t : o.token_ids) msg_.add_token_ids(t);
      fill_logprobs(o.logprobs, *tokenizer_, msg_.mutable_logprobs());
      fill_logprobs(o.prompt_logprobs, *tokenizer_, msg_.mutable_prompt_logprobs());
      timed_out = timed_out || o.finish == FinishReason::kTimeout;
      if (o.finish != FinishReason::kNone) {
        msg_.set_finish_reason(finish_reason_name(o.finish));
        msg_.set_stop_reason(o.stop_reason);
        fill_usage(o.usage, msg_.mutable_usage());
      }
      const grpc::Status serialized = serialize_response(msg_, &bytes_);
      if (!serialized.ok()) {
        failure = internal_error(serialized.error_message());
        break;
      }
      if (!send(&bytes_)) break;
    }
    grpc::Status status = grpc::Status::OK;
    if (broken() || started_.job->cancelled()) {
      started_.job->cancel();
      status = ctx_->IsCancelled()
                   ? grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client")
                   : grpc::Status(grpc::StatusCode::CANCELLED, "request cancelled");
      if (ctx_->deadline() <= std::chrono::system_clock::now()) {
        status = deadline_exceeded();
      }
    } else if (!failure.is_ok()) {
      status = svc_.with_retry_hint(ctx_, to_grpc_status(failure));
    } else if (timed_out && call_has_deadline(ctx_)) {
      status = deadline_exceeded();
    }
    svc_.metrics().count_grpc("Generate", grpc_code_name(status.error_code()));
    started_.registration.reset();
    started_.slot.reset();
    Finish(status);
  }

  GenerationService& svc_;
  grpc::CallbackServerContext* ctx_;
  GenerationService::Started started_;
  const Tokenizer* tokenizer_ = nullptr;
  v1::GenerateResponse msg_;
  grpc::ByteBuffer bytes_;  // msg_ serialized; written by StartWrite
};

// Unary Complete: the same job, collected into one response on a worker thread.
class CompleteReactor : public grpc::ServerUnaryReactor {
 public:
  CompleteReactor(GenerationService& svc, grpc::CallbackServerContext* ctx,
                  GenerationService::Started started, int32_t n, grpc::ByteBuffer* out)
      : n_(std::max(n, 1)), svc_(svc), ctx_(ctx), started_(std::move(started)), out_(out) {
    thread_ = std::thread([this] { run(); });
  }
  void OnCancel() override { started_.job->cancel(); }
  void OnDone() override {
    join_or_detach(thread_);
    delete this;
  }

 private:
  void run() {
    const Tokenizer& tok = svc_.state().engine()->tokenizer();
    const int32_t n = n_;
    for (int32_t i = 0; i < n; ++i) resp_->add_choices()->set_index(i);
    Status failure;
    Usage usage;
    bool timed_out = false;
    while (true) {
      auto ev = started_.job->next(std::chrono::milliseconds(50));
      if (!ev) {
        if (started_.job->timed_out()) continue;
        break;
      }
      const StepOutput& o = ev->output;
      usage = o.usage;
      const int idx = std::clamp(o.index, 0, n - 1);
      v1::Choice* c = resp_->mutable_choices(idx);
      c->mutable_text()->append(o.text);
      for (int32_t t : o.token_ids) c->add_token_ids(t);
      fill_logprobs(o.logprobs, tok, c->mutable_logprobs());
      if (!o.prompt_logprobs.empty()) {
        for (int32_t i = 0; i < n; ++i) {  // the samples share their prompt
          fill_logprobs(o.prompt_logprobs, tok,
                        resp_->mutable_choices(i)->mutable_prompt_logprobs());
        }
      }
      timed_out = timed_out || o.finish == FinishReason::kTimeout;
      if (o.finish != FinishReason::kNone) {
        c->set_finish_reason(finish_reason_name(o.finish));
        c->set_stop_reason(o.stop_reason);
      }
      if (o.finish == FinishReason::kError && failure.is_ok()) {
        failure = o.error.is_ok() ? internal_error("generation failed") : o.error;
      }
    }
    resp_->set_id(started_.id);
    resp_->set_model(svc_.state().model_name());
    fill_usage(usage, resp_->mutable_usage());
    grpc::Status status =
        failure.is_ok() ? grpc::Status::OK : svc_.with_retry_hint(ctx_, to_grpc_status(failure));
    if (started_.job->cancelled()) {
      status = ctx_->deadline() <= std::chrono::system_clock::now()
                   ? deadline_exceeded()
                   : grpc::Status(grpc::StatusCode::CANCELLED, "request cancelled");
    }
    if (status.ok() && timed_out && call_has_deadline(ctx_)) status = deadline_exceeded();
    if (status.ok()) status = serialize_response(response_, out_);
    svc_.metrics().count_grpc("Complete", grpc_code_name(status.error_code()));
    started_.registration.reset();
    started_.slot.reset();
    Finish(status);
  }
  const int32_t n_;
  GenerationService& svc_;
  grpc::CallbackServerContext* ctx_;
  GenerationService::Started started_;
  v1::CompleteResponse response_;
  v1::CompleteResponse* resp_ = &response_;
  grpc::ByteBuffer* out_;
  std::thread thread_;
};

class FailedGenerate : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit FailedGenerate(const grpc::Status& s) { Finish(s); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* start_generate_call(GenerationService& svc,
                                                                grpc::CallbackServerContext* ctx,
                                                                GenerationService::Started job) {
  return new GenerateReactor(svc, ctx, std::move(job));
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* failed_generate_call(const grpc::Status& status) {
  return new FailedGenerate(status);
}

grpc::ServerUnaryReactor* start_complete_call(GenerationService& svc,
                                              grpc::CallbackServerContext* ctx,
                                              GenerationService::Started job, int32_t n,
                                              grpc::ByteBuffer* response) {
  return new CompleteReactor(svc, ctx, std::move(job), n, response);
}

}  // namespace llmserve
