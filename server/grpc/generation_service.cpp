#include "server/grpc/generation_service.h"

#include <atomic>
#include <random>

#include <google/protobuf/descriptor.h>

#include "engine/tokenizer/utf8.h"
#include "server/common/request_grammar.h"
#include "server/grpc/grpc_status.h"
#include "server/grpc/proto_convert.h"
#include "server/grpc/proto_request.h"

namespace llmserve {

namespace {

std::string new_grpc_id() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}() ^ counter.fetch_add(1));
  static const char* kHex = "0123456789abcdef";
  std::string id = "gen-";
  uint64_t a = rng();
  for (int i = 0; i < 16; ++i) id += kHex[(a >> (i * 4)) & 15];
  return id;
}

std::optional<std::chrono::steady_clock::time_point> steady_deadline(
    const grpc::CallbackServerContext* ctx) {
  const auto d = ctx->deadline();
  if (d == std::chrono::system_clock::time_point::max()) return std::nullopt;
  const auto left = d - std::chrono::system_clock::now();
  if (left > std::chrono::hours(24 * 365)) return std::nullopt;
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(left);
}

// OnDone may run on the pump thread itself (inside Finish); never join from there.
void join_or_detach(std::thread& t) {
  if (t.get_id() == std::this_thread::get_id())
    t.detach();
  else if (t.joinable())
    t.join();
}

// Server-streaming Generate: a pump thread pulls engine outputs and writes them one at a time.
class GenerateReactor : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  GenerateReactor(GenerationService& svc, grpc::CallbackServerContext* ctx,
                  GenerationService::Started started)
      : svc_(svc), ctx_(ctx), started_(std::move(started)) {
    registration_ = svc_.state().active().add(started_.id, started_.job.get());
    tokenizer_ = &svc_.state().engine()->tokenizer();
    thread_ = std::thread([this] { pump(); });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    writing_ = false;
    if (!ok) broken_ = true;
    cv_.notify_all();
  }
  void OnCancel() override {
    started_.job->cancel();
    std::lock_guard lock(mu_);
    broken_ = true;
    cv_.notify_all();
  }
  void OnDone() override {
    join_or_detach(thread_);
    delete this;
  }

 private:
  void pump() {
    Status failure;
    while (true) {
      auto ev = started_.job->next(std::chrono::milliseconds(50));
      {
        std::lock_guard lock(mu_);
        if (broken_) break;
      }
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
      if (o.finish != FinishReason::kNone) {
        msg_.set_finish_reason(finish_reason_name(o.finish));
        msg_.set_stop_reason(o.stop_reason);
        fill_usage(o.usage, msg_.mutable_usage());
      }
      std::unique_lock lock(mu_);
      writing_ = true;
      StartWrite(&msg_);
      cv_.wait(lock, [this] { return !writing_ || broken_; });
      if (broken_) {
        // Wait for the outstanding write to complete before touching msg_ again.
        cv_.wait(lock, [this] { return !writing_; });
        break;
      }
    }
    grpc::Status status = grpc::Status::OK;
    bool broken;
    {
      std::lock_guard lock(mu_);
      broken = broken_;
    }
    if (broken || started_.job->cancelled()) {
      started_.job->cancel();
      status = ctx_->IsCancelled()
                   ? grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client")
                   : grpc::Status(grpc::StatusCode::CANCELLED, "request cancelled");
      if (ctx_->deadline() <= std::chrono::system_clock::now()) {
        status = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline exceeded");
      }
    } else if (!failure.is_ok()) {
      status = to_grpc_status(failure);
    }
    svc_.metrics().count_grpc("Generate", grpc_code_name(status.error_code()));
    registration_.reset();
    started_.slot.reset();
    Finish(status);
  }

  GenerationService& svc_;
  grpc::CallbackServerContext* ctx_;
  GenerationService::Started started_;
  std::unique_ptr<ActiveRequests::Registration> registration_;
  const Tokenizer* tokenizer_ = nullptr;
  v1::GenerateResponse msg_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool writing_ = false;
  bool broken_ = false;
  std::thread thread_;
};

// Unary Complete: the same job, collected into one response on a worker thread.
class CompleteReactor : public grpc::ServerUnaryReactor {
 public:
  CompleteReactor(GenerationService& svc, GenerationService::Started started, int32_t n,
                  v1::CompleteResponse* resp)
      : n_(std::max(n, 1)), svc_(svc), started_(std::move(started)), resp_(resp) {
    registration_ = svc_.state().active().add(started_.id, started_.job.get());
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
    grpc::Status status = failure.is_ok() ? grpc::Status::OK : to_grpc_status(failure);
    if (started_.job->cancelled()) {
      status = grpc::Status(grpc::StatusCode::CANCELLED, "request cancelled");
    }
    svc_.metrics().count_grpc("Complete", grpc_code_name(status.error_code()));
    registration_.reset();
    started_.slot.reset();
    Finish(status);
  }
  const int32_t n_;
  GenerationService& svc_;
  GenerationService::Started started_;
  v1::CompleteResponse* resp_;
  std::unique_ptr<ActiveRequests::Registration> registration_;
  std::thread thread_;
};

}  // namespace

GenerationService::GenerationService(ServerState& state, ServerMetrics& metrics)
    : state_(state), metrics_(metrics), keys_(state.options().api_keys) {
  // Every method of the service (read from the proto, so a new one is not forgotten) at 0 OK.
  const google::protobuf::ServiceDescriptor* service =
      v1::GenerateRequest::descriptor()->file()->FindServiceByName("Generation");
  for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
    metrics_.declare_grpc(service->method(i)->name(), grpc_code_name(grpc::StatusCode::OK));
  }
}

bool GenerationService::authorized(const grpc::CallbackServerContext* ctx) const {
  if (!keys_.enabled()) return true;
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return false;
  return keys_.authorize(std::string_view(it->second.data(), it->second.size()));
}

grpc::ServerUnaryReactor* GenerationService::finish_unary(grpc::CallbackServerContext* ctx,
                                                          const char* method,
                                                          const grpc::Status& status) {
  metrics_.count_grpc(method, grpc_code_name(status.error_code()));
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

Result<GenerationService::Started> GenerationService::start_job(grpc::CallbackServerContext* ctx,
                                                                const v1::GenerateRequest& req) {
  RejectReason reason = RejectReason::kNone;
  Status admitted = state_.admit(&reason, state_.options().max_concurrent_generations);
  if (!admitted.is_ok()) {
    metrics_.count_rejection(reject_reason_name(reason));
    return admitted;
  }
  Started s;
  s.slot = state_.take_slot();
  Engine& engine = *state_.engine();
  RequestLimits limits;
  limits.vocab_size = engine.tokenizer().vocab_size();
  limits.max_model_len = engine.max_model_len();
  limits.max_logprobs = engine.options().max_logprobs;
  limits.model_name = state_.model_name();
  LLMSERVE_ASSIGN_OR_RETURN(GenerationRequest parsed,
                            parse_proto_request(req, engine.tokenizer(), limits));
  LLMSERVE_RETURN_IF_ERROR(parsed.params.validate(limits.vocab_size, limits.max_logprobs));
  s.id = req.request_id().empty() ? new_grpc_id() : req.request_id();
  auto deadline = steady_deadline(ctx);
  if (!deadline && state_.options().request_timeout_seconds > 0) {
    deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(state_.options().request_timeout_seconds));
  }
  std::vector<GenerateRequest> engine_requests =
      make_generate_requests(parsed, std::move(parsed.prompt_token_ids), s.id, deadline);
  LLMSERVE_RETURN_IF_ERROR(attach_request_grammar(engine, parsed, deadline, &engine_requests));
  auto job = GenerationJob::start(engine, std::move(engine_requests));
  if (!job.is_ok()) {
    if (job.status().code() == StatusCode::kResourceExhausted)
      metrics_.count_rejection("queue_full");
    return job.status();
  }
  s.job = std::move(job).value();
  return s;
}

grpc::ServerWriteReactor<v1::GenerateResponse>* GenerationService::Generate(
    grpc::CallbackServerContext* ctx, const v1::GenerateRequest* req) {
  auto fail = [&](const grpc::Status& st) {
    metrics_.count_grpc("Generate", grpc_code_name(st.error_code()));
    class Failed : public grpc::ServerWriteReactor<v1::GenerateResponse> {
     public:
      explicit Failed(const grpc::Status& s) { Finish(s); }
      void OnDone() override { delete this; }
    };
    return new Failed(st);
  };
  if (!authorized(ctx)) return fail(unauthenticated_status());
  auto started = start_job(ctx, *req);
  if (!started.is_ok()) return fail(to_grpc_status(started.status()));
  return new GenerateReactor(*this, ctx, std::move(started).value());
}

grpc::ServerUnaryReactor* GenerationService::Complete(grpc::CallbackServerContext* ctx,
                                                      const v1::GenerateRequest* req,
                                                      v1::CompleteResponse* resp) {
  if (!authorized(ctx)) return finish_unary(ctx, "Complete", unauthenticated_status());
  auto started = start_job(ctx, *req);
  if (!started.is_ok()) return finish_unary(ctx, "Complete", to_grpc_status(started.status()));
  const int32_t n = req->has_n() ? req->n() : 1;
  return new CompleteReactor(*this, std::move(started).value(), n, resp);
}

grpc::ServerUnaryReactor* GenerationService::Tokenize(grpc::CallbackServerContext* ctx,
                                                      const v1::TokenizeRequest* req,
                                                      v1::TokenizeResponse* resp) {
  if (!authorized(ctx)) return finish_unary(ctx, "Tokenize", unauthenticated_status());
  Engine* engine = state_.engine();
  if (engine == nullptr) {
    return finish_unary(ctx, "Tokenize", to_grpc_status(unavailable("model not loaded")));
  }
  const bool add_special = req->has_add_special_tokens() ? req->add_special_tokens() : true;
  const auto ids = engine->tokenizer().encode(req->text(), add_special, true);
  for (int32_t id : ids) {
    resp->add_token_ids(id);
    resp->add_tokens(utf8_sanitize(engine->tokenizer().token_text(id)));
  }
  resp->set_count(static_cast<int32_t>(ids.size()));
  resp->set_max_model_len(engine->max_model_len());
  return finish_unary(ctx, "Tokenize", grpc::Status::OK);
}

grpc::ServerUnaryReactor* GenerationService::Detokenize(grpc::CallbackServerContext* ctx,
                                                        const v1::DetokenizeRequest* req,
                                                        v1::DetokenizeResponse* resp) {
  if (!authorized(ctx)) return finish_unary(ctx, "Detokenize", unauthenticated_status());
  Engine* engine = state_.engine();
  if (engine == nullptr) {
    return finish_unary(ctx, "Detokenize", to_grpc_status(unavailable("model not loaded")));
  }
  const int32_t vocab = engine->tokenizer().vocab_size();
  std::vector<int32_t> ids(req->token_ids().begin(), req->token_ids().end());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab) {
      return finish_unary(
          ctx, "Detokenize",
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "token_ids: " + std::to_string(id) +
                                                               " is out of the vocabulary [0, " +
                                                               std::to_string(vocab) + ")"));
    }
  }
  resp->set_text(utf8_sanitize(engine->tokenizer().decode(ids, req->skip_special_tokens())));
  return finish_unary(ctx, "Detokenize", grpc::Status::OK);
}

grpc::ServerUnaryReactor* GenerationService::ListModels(grpc::CallbackServerContext* ctx,
                                                        const v1::ListModelsRequest* /*req*/,
                                                        v1::ListModelsResponse* resp) {
  if (!authorized(ctx)) return finish_unary(ctx, "ListModels", unauthenticated_status());
  v1::ModelInfo* m = resp->add_models();
  m->set_id(state_.model_name());
  m->set_owned_by("llmserve");
  m->set_created(static_cast<int64_t>(metrics_.start_time_seconds()));
  m->set_max_model_len(state_.engine() ? state_.engine()->max_model_len() : 0);
  return finish_unary(ctx, "ListModels", grpc::Status::OK);
}

}  // namespace llmserve
