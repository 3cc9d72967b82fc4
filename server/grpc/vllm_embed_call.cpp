#include "server/grpc/vllm_embed_call.h"

#include <thread>

#include "engine/model/model_config.h"
#include "server/common/embedding_job.h"
#include "server/grpc/grpc_status.h"
#include "server/grpc/wire_codec.h"

namespace llmserve {
namespace {

namespace vpb = ::vllm::grpc::engine;
constexpr const char* kMethod = "VllmEngine/Embed";

std::chrono::milliseconds timeout_of(const grpc::CallbackServerContext* ctx, double default_s) {
  const auto d = ctx->deadline();
  if (d != std::chrono::system_clock::time_point::max() &&
      d - std::chrono::system_clock::now() < std::chrono::hours(24 * 365)) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(d - std::chrono::system_clock::now());
    return std::max(left, std::chrono::milliseconds(1));
  }
  if (default_s > 0) {
    return std::chrono::milliseconds(static_cast<int64_t>(default_s * 1000.0));
  }
  return std::chrono::milliseconds(0);
}

class EmbedReactor : public grpc::ServerUnaryReactor {
 public:
  EmbedReactor(VllmEngineService& svc, std::unique_ptr<GenerationJob> job, grpc::ByteBuffer* out)
      : svc_(svc), job_(std::move(job)), out_(out) {
    thread_ = std::thread([this] { run(); });
  }
  void OnCancel() override { job_->cancel(); }
  void OnDone() override {
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else if (thread_.joinable()) {
      thread_.join();
    }
    delete this;
  }

 private:
  void run() {
    auto result = collect_embeddings(*job_);
    grpc::Status status;
    if (result.is_ok()) {
      vpb::EmbedResponse resp;
      const std::vector<float>& v = result->vectors.front();
      resp.mutable_embedding()->Add(v.begin(), v.end());
      resp.set_prompt_tokens(static_cast<uint32_t>(result->prompt_tokens));
      resp.set_embedding_dim(static_cast<uint32_t>(v.size()));
      status = serialize_response(resp, out_);
    } else {
      status = to_grpc_status(result.status());
    }
    svc_.metrics().count_grpc(kMethod, grpc_code_name(status.error_code()));
    Finish(status);
  }
  VllmEngineService& svc_;
  std::unique_ptr<GenerationJob> job_;
  grpc::ByteBuffer* out_;
  std::thread thread_;
};

}  // namespace

grpc::ServerUnaryReactor* start_vllm_embed_call(VllmEngineService& svc,
                                                grpc::CallbackServerContext* ctx,
                                                const grpc::ByteBuffer& request,
                                                grpc::ByteBuffer* response) {
  auto& calls = svc.calls();
  if (!calls.authorized(ctx)) return calls.finish_unary(ctx, kMethod, unauthenticated_status());
  vpb::EmbedRequest req;
  if (grpc::Status parsed = parse_request(request, &req); !parsed.ok()) {
    return calls.finish_unary(ctx, kMethod, parsed);
  }
  Engine* engine = svc.state().engine();
  if (engine == nullptr) {
    return calls.finish_unary(ctx, kMethod,
                              grpc::Status(grpc::StatusCode::UNAVAILABLE, "no model loaded"));
  }
  if (req.tokenized().input_ids_size() == 0) {
    return calls.finish_unary(
        ctx, kMethod,
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "tokenized.input_ids: must not be empty"));
  }
  std::vector<int32_t> ids;
  const auto vocab = static_cast<uint32_t>(engine->model_config().vocab_size);
  for (uint32_t id : req.tokenized().input_ids()) {
    if (id >= vocab) {
      return calls.finish_unary(
          ctx, kMethod,
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                       "tokenized.input_ids: token id " + std::to_string(id) +
                           " is outside the vocab [0, " + std::to_string(vocab) + ")"));
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  std::vector<std::vector<int32_t>> inputs;
  inputs.push_back(std::move(ids));
  auto job = start_embeddings(*engine, std::move(inputs), 0,
                              req.request_id().empty() ? "embd" : req.request_id(),
                              timeout_of(ctx, svc.state().options().request_timeout_seconds));
  if (!job.is_ok()) {
    return calls.finish_unary(ctx, kMethod,
                              calls.with_retry_hint(ctx, to_grpc_status(job.status())));
  }
  return new EmbedReactor(svc, std::move(job).value(), response);
}

}  // namespace llmserve
