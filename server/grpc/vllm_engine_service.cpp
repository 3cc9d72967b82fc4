#include "server/grpc/vllm_engine_service.h"

#include <algorithm>
#include <chrono>

#include <google/protobuf/descriptor.h>

#include "server/common/heap_release.h"
#include "server/grpc/grpc_status.h"
#include "server/grpc/vllm_embed_call.h"
#include "server/grpc/vllm_generate_call.h"
#include "server/grpc/vllm_info.h"
#include "server/grpc/vllm_request.h"
#include "server/grpc/vllm_tokenizer_call.h"
#include "server/grpc/wire_codec.h"

namespace llmserve {

namespace {

namespace vpb = ::vllm::grpc::engine;
namespace cpb = ::smg::grpc::common;

// "VllmEngine/<method>": the metrics label of a method.
std::string label(const char* method) {
  return std::string("VllmEngine/") + method;
}

class FailedStream : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit FailedStream(const grpc::Status& s) { Finish(s); }
  void OnDone() override { delete this; }
};

grpc::Status not_loaded() {
  return to_grpc_status(unavailable("model not loaded"));
}

}  // namespace

VllmEngineService::VllmEngineService(ServerState& state, ServerMetrics& metrics,
                                     GenerationService& calls)
    : state_(state), metrics_(metrics), calls_(calls) {
  const google::protobuf::ServiceDescriptor* service =
      vpb::GenerateRequest::descriptor()->file()->FindServiceByName("VllmEngine");
  for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
    metrics_.declare_grpc(label(service->method(i)->name().c_str()),
                          grpc_code_name(grpc::StatusCode::OK));
  }
}

VllmEngineService::Writer* VllmEngineService::fail_stream(Ctx* ctx, const char* method,
                                                          const grpc::Status& st) {
  const grpc::Status status = calls_.with_retry_hint(ctx, st);
  metrics_.count_grpc(label(method), grpc_code_name(status.error_code()));
  return new FailedStream(status);
}

VllmEngineService::Writer* VllmEngineService::Generate(Ctx* ctx, const Bytes* bytes) {
  last_receive_.store(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  if (!calls_.authorized(ctx)) return fail_stream(ctx, "Generate", unauthenticated_status());
  const LargeRequestScope large(bytes->Length());  // declared before what it outlives
  vpb::GenerateRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return fail_stream(ctx, "Generate", parsed);
  }
  if (state_.engine() == nullptr) return fail_stream(ctx, "Generate", not_loaded());
  const Tokenizer& tokenizer = state_.engine()->tokenizer();
  std::optional<GenerationRequest> kept;  // what the response builder needs
  auto started = start_grpc_job(
      state_, metrics_, ctx,
      [&](const RequestLimits& limits) -> Result<GenerationRequest> {
        LLMSERVE_ASSIGN_OR_RETURN(GenerationRequest r, parse_vllm_request(req, tokenizer, limits));
        kept.emplace();
        kept->params = r.params;
        return r;
      },
      req.request_id());
  if (!started.is_ok()) return fail_stream(ctx, "Generate", to_grpc_status(started.status()));
  GrpcJob job = std::move(started).value();
  VllmResponseBuilder builder(req.stream(), kept->params.n, job.prompt, kept->params.stop,
                              kept->params.stop_token_ids);
  return start_vllm_generate_call(*this, ctx, std::move(job), std::move(builder));
}

VllmEngineService::Unary* VllmEngineService::HealthCheck(Ctx* ctx, const Bytes* bytes, Bytes* out) {
  vpb::HealthCheckRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return calls_.finish_unary(ctx, "VllmEngine/HealthCheck", parsed);
  }
  vpb::HealthCheckResponse resp;
  std::string why;
  resp.set_healthy(state_.ready(&why));
  resp.set_message(resp.healthy() ? "ready" : why);
  return calls_.finish_unary(ctx, "VllmEngine/HealthCheck", grpc::Status::OK, &resp, out);
}

VllmEngineService::Unary* VllmEngineService::FlushCache(Ctx* ctx, const Bytes* bytes, Bytes* out) {
  const char* m = "VllmEngine/FlushCache";
  if (!calls_.authorized(ctx)) return calls_.finish_unary(ctx, m, unauthenticated_status());
  cpb::FlushCacheRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return calls_.finish_unary(ctx, m, parsed);
  }
  if (state_.engine() == nullptr) return calls_.finish_unary(ctx, m, not_loaded());
  // Never preempts: blocks that running requests hold stay cached until those finish, so
  // timeout_s (how long to wait for the engine to go idle) is not needed.
  cpb::FlushCacheResponse resp;
  auto r = state_.engine()->reset_prefix_cache();
  if (!r.is_ok() && r.status().code() != StatusCode::kUnimplemented) {
    return calls_.finish_unary(ctx, m, to_grpc_status(r.status()));
  }
  resp.set_success(r.is_ok());
  if (!r.is_ok()) {
    resp.set_message(r.status().message());
  } else if (r.value()) {
    resp.set_message("prefix cache flushed");
  } else {
    resp.set_message(
        "prefix cache flushed; blocks that running requests hold are dropped when they finish");
  }
  return calls_.finish_unary(ctx, m, grpc::Status::OK, &resp, out);
}

VllmEngineService::Unary* VllmEngineService::Embed(Ctx* ctx, const Bytes* bytes, Bytes* out) {
  return start_vllm_embed_call(*this, ctx, *bytes, out);
}

VllmEngineService::Unary* VllmEngineService::Abort(Ctx* ctx, const Bytes* bytes, Bytes* out) {
  const char* m = "VllmEngine/Abort";
  if (!calls_.authorized(ctx)) return calls_.finish_unary(ctx, m, unauthenticated_status());
  vpb::AbortRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return calls_.finish_unary(ctx, m, parsed);
  }
  // Unknown ids (already finished) are not an error: the gateway aborts on any dropped call.
  for (const std::string& id : req.request_ids()) state_.active().cancel(id);
  vpb::AbortResponse resp;
  return calls_.finish_unary(ctx, m, grpc::Status::OK, &resp, out);
}

VllmEngineService::Unary* VllmEngineService::GetModelInfo(Ctx* ctx, const Bytes* bytes,
                                                          Bytes* out) {
  const char* m = "VllmEngine/GetModelInfo";
  if (!calls_.authorized(ctx)) return calls_.finish_unary(ctx, m, unauthenticated_status());
  vpb::GetModelInfoRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return calls_.finish_unary(ctx, m, parsed);
  }
  if (state_.engine() == nullptr) return calls_.finish_unary(ctx, m, not_loaded());
  const vpb::GetModelInfoResponse resp = vllm_model_info(state_);
  return calls_.finish_unary(ctx, m, grpc::Status::OK, &resp, out);
}

VllmEngineService::Unary* VllmEngineService::GetServerInfo(Ctx* ctx, const Bytes* bytes,
                                                           Bytes* out) {
  const char* m = "VllmEngine/GetServerInfo";
  if (!calls_.authorized(ctx)) return calls_.finish_unary(ctx, m, unauthenticated_status());
  vpb::GetServerInfoRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return calls_.finish_unary(ctx, m, parsed);
  }
  if (state_.engine() == nullptr) return calls_.finish_unary(ctx, m, not_loaded());
  const double uptime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const vpb::GetServerInfoResponse resp = vllm_server_info(state_, uptime, last_receive_.load());
  return calls_.finish_unary(ctx, m, grpc::Status::OK, &resp, out);
}

VllmEngineService::Unary* VllmEngineService::GetLoads(Ctx* ctx, const Bytes* bytes, Bytes* out) {
  const char* m = "VllmEngine/GetLoads";
  if (!calls_.authorized(ctx)) return calls_.finish_unary(ctx, m, unauthenticated_status());
  vpb::GetLoadsRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return calls_.finish_unary(ctx, m, parsed);
  }
  if (state_.engine() == nullptr) return calls_.finish_unary(ctx, m, not_loaded());
  const vpb::GetLoadsResponse resp = vllm_loads(state_, req);
  return calls_.finish_unary(ctx, m, grpc::Status::OK, &resp, out);
}

Result<std::shared_ptr<const TokenizerBundle>> VllmEngineService::bundle() {
  std::lock_guard lock(bundle_mu_);
  if (!bundle_) {
    LLMSERVE_ASSIGN_OR_RETURN(TokenizerBundle b, make_tokenizer_bundle(*state_.engine()));
    bundle_ = std::make_shared<const TokenizerBundle>(std::move(b));
  }
  return bundle_;
}

VllmEngineService::Writer* VllmEngineService::GetTokenizer(Ctx* ctx, const Bytes* bytes) {
  if (!calls_.authorized(ctx)) return fail_stream(ctx, "GetTokenizer", unauthenticated_status());
  cpb::GetTokenizerRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return fail_stream(ctx, "GetTokenizer", parsed);
  }
  if (state_.engine() == nullptr) return fail_stream(ctx, "GetTokenizer", not_loaded());
  auto b = bundle();
  if (!b.is_ok()) return fail_stream(ctx, "GetTokenizer", to_grpc_status(b.status()));
  return start_tokenizer_call(metrics_, std::move(b).value());
}

VllmEngineService::Writer* VllmEngineService::SubscribeKvEvents(Ctx* ctx, const Bytes* bytes) {
  if (!calls_.authorized(ctx)) {
    return fail_stream(ctx, "SubscribeKvEvents", unauthenticated_status());
  }
  cpb::SubscribeKvEventsRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return fail_stream(ctx, "SubscribeKvEvents", parsed);
  }
  Engine* engine = state_.engine();
  KvEventBus* bus = engine != nullptr ? engine->kv_event_bus() : nullptr;
  if (bus == nullptr) {
    return fail_stream(ctx, "SubscribeKvEvents",
                       grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                    "SubscribeKvEvents: KV events are off on this worker"));
  }
  KvEventsFanout* fanout = nullptr;
  {
    std::lock_guard lock(kv_events_mu_);
    if (!kv_events_) {
      kv_events_ = std::make_unique<KvEventsFanout>(
          *bus, engine->options().block_size,
          static_cast<size_t>(std::max(state_.options().max_kv_event_subscribers, 1)), metrics_);
    }
    fanout = kv_events_.get();
  }
  Result<KvEventsFanout::Writer*> stream = fanout->open(req.start_sequence_number());
  if (!stream.is_ok()) {
    return fail_stream(ctx, "SubscribeKvEvents", to_grpc_status(stream.status()));
  }
  return *stream;
}

}  // namespace llmserve
