#include "server/grpc/generation_service.h"

#include <google/protobuf/descriptor.h>

#include "engine/tokenizer/utf8.h"
#include "server/common/field_checks.h"
#include "server/common/heap_release.h"
#include "server/grpc/generation_reactors.h"
#include "server/grpc/grpc_status.h"
#include "server/grpc/proto_request.h"
#include "server/grpc/wire_codec.h"

namespace llmserve {

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

grpc::Status GenerationService::with_retry_hint(grpc::CallbackServerContext* ctx,
                                                grpc::Status status) const {
  const auto code = status.error_code();
  if (code == grpc::StatusCode::RESOURCE_EXHAUSTED || code == grpc::StatusCode::UNAVAILABLE) {
    ctx->AddTrailingMetadata("retry-after", std::to_string(state_.options().retry_after_seconds));
  }
  return status;
}

grpc::ServerUnaryReactor* GenerationService::finish_unary(
    grpc::CallbackServerContext* ctx, const char* method, grpc::Status status,
    const google::protobuf::MessageLite* response, grpc::ByteBuffer* out) {
  if (status.ok() && response != nullptr && out != nullptr) {
    status = serialize_response(*response, out);
  }
  status = with_retry_hint(ctx, std::move(status));
  metrics_.count_grpc(method, grpc_code_name(status.error_code()));
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

Result<GenerationService::Started> GenerationService::start_job(grpc::CallbackServerContext* ctx,
                                                                const v1::GenerateRequest& req) {
  return start_grpc_job(
      state_, metrics_, ctx,
      [&](const RequestLimits& limits) {
        return parse_proto_request(req, state_.engine()->tokenizer(), limits,
                                   state_.reasoning_parser());
      },
      req.request_id());
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* GenerationService::Generate(
    grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* bytes) {
  auto fail = [&](const grpc::Status& st) {
    const grpc::Status status = with_retry_hint(ctx, st);
    metrics_.count_grpc("Generate", grpc_code_name(status.error_code()));
    return failed_generate_call(status);
  };
  if (!authorized(ctx)) return fail(unauthenticated_status());
  const LargeRequestScope large(bytes->Length());  // declared before what it outlives
  v1::GenerateRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) return fail(parsed);
  auto started = start_job(ctx, req);
  if (!started.is_ok()) return fail(to_grpc_status(started.status()));
  return start_generate_call(*this, ctx, std::move(started).value());
}

grpc::ServerUnaryReactor* GenerationService::Complete(grpc::CallbackServerContext* ctx,
                                                      const grpc::ByteBuffer* bytes,
                                                      grpc::ByteBuffer* resp) {
  if (!authorized(ctx)) return finish_unary(ctx, "Complete", unauthenticated_status());
  const LargeRequestScope large(bytes->Length());
  v1::GenerateRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return finish_unary(ctx, "Complete", parsed);
  }
  auto started = start_job(ctx, req);
  if (!started.is_ok()) return finish_unary(ctx, "Complete", to_grpc_status(started.status()));
  const int32_t n = req.has_n() ? req.n() : 1;
  return start_complete_call(*this, ctx, std::move(started).value(), n, resp);
}

grpc::ServerUnaryReactor* GenerationService::Tokenize(grpc::CallbackServerContext* ctx,
                                                      const grpc::ByteBuffer* bytes,
                                                      grpc::ByteBuffer* out) {
  if (!authorized(ctx)) return finish_unary(ctx, "Tokenize", unauthenticated_status());
  v1::TokenizeRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return finish_unary(ctx, "Tokenize", parsed);
  }
  Engine* engine = state_.engine();
  if (engine == nullptr) {
    return finish_unary(ctx, "Tokenize", to_grpc_status(unavailable("model not loaded")));
  }
  if (Status model = check_model_name(req.model(), state_.model_name()); !model.is_ok()) {
    return finish_unary(ctx, "Tokenize", to_grpc_status(model));
  }
  const bool add_special = req.has_add_special_tokens() ? req.add_special_tokens() : true;
  const auto ids = engine->tokenizer().encode(req.text(), add_special, true);
  v1::TokenizeResponse resp;
  for (int32_t id : ids) {
    resp.add_token_ids(id);
    resp.add_tokens(utf8_sanitize(engine->tokenizer().token_text(id)));
  }
  resp.set_count(static_cast<int32_t>(ids.size()));
  resp.set_max_model_len(engine->max_model_len());
  return finish_unary(ctx, "Tokenize", grpc::Status::OK, &resp, out);
}

grpc::ServerUnaryReactor* GenerationService::Detokenize(grpc::CallbackServerContext* ctx,
                                                        const grpc::ByteBuffer* bytes,
                                                        grpc::ByteBuffer* out) {
  if (!authorized(ctx)) return finish_unary(ctx, "Detokenize", unauthenticated_status());
  v1::DetokenizeRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return finish_unary(ctx, "Detokenize", parsed);
  }
  Engine* engine = state_.engine();
  if (engine == nullptr) {
    return finish_unary(ctx, "Detokenize", to_grpc_status(unavailable("model not loaded")));
  }
  const int32_t vocab = engine->tokenizer().vocab_size();
  std::vector<int32_t> ids(req.token_ids().begin(), req.token_ids().end());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab) {
      return finish_unary(
          ctx, "Detokenize",
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "token_ids: " + std::to_string(id) +
                                                               " is out of the vocabulary [0, " +
                                                               std::to_string(vocab) + ")"));
    }
  }
  v1::DetokenizeResponse resp;
  resp.set_text(utf8_sanitize(engine->tokenizer().decode(ids, req.skip_special_tokens())));
  return finish_unary(ctx, "Detokenize", grpc::Status::OK, &resp, out);
}

grpc::ServerUnaryReactor* GenerationService::ListModels(grpc::CallbackServerContext* ctx,
                                                        const grpc::ByteBuffer* bytes,
                                                        grpc::ByteBuffer* out) {
  if (!authorized(ctx)) return finish_unary(ctx, "ListModels", unauthenticated_status());
  v1::ListModelsRequest req;
  if (grpc::Status parsed = parse_request(*bytes, &req); !parsed.ok()) {
    return finish_unary(ctx, "ListModels", parsed);
  }
  v1::ListModelsResponse resp;
  v1::ModelInfo* m = resp.add_models();
  m->set_id(state_.model_name());
  m->set_owned_by("llmserve");
  m->set_created(static_cast<int64_t>(metrics_.start_time_seconds()));
  m->set_max_model_len(state_.engine() ? state_.engine()->max_model_len() : 0);
  return finish_unary(ctx, "ListModels", grpc::Status::OK, &resp, out);
}

}  // namespace llmserve
